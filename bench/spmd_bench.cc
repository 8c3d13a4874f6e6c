// SPMD: the seed's SPMD MNIST step (mnist/spmd_trainer.h, partitioned over
// a (2,2,1,1) mesh) against the data-parallel step (mnist/trainer.h) on the
// same 4 devices of one process and the same batches, and the bytes the
// partitioner's inserted collectives move per step against the least the
// shardings require.
//
// Headlines:
//   spmd.step_ms_vs_dp           SPMD step time / data-parallel step time
//                                (best round of each, alternated; target
//                                <= 1.2)
//   spmd.collective_bytes_vs_min bytes moved per device per step by the
//                                inserted collectives / the least required
//   spmd.step_ms                 the SPMD step (best round)
#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/headline.h"
#include "mnist/data.h"
#include "mnist/spmd_trainer.h"
#include "mnist/trainer.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::bench {
namespace {

namespace rt = podscope::runtime;

constexpr int kBatch = 32;
constexpr int kStepsPerRound = 3;
constexpr int kTurns = 3;

template <typename F>
double Seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

void BM_SpmdStepVsDataParallel(benchmark::State& state) {
  rt::ClientOptions options;
  options.num_devices = 4;
  auto client = rt::CreateClient(options);
  if (!client.ok()) {
    state.SkipWithError(client.status().ToString().c_str());
    return;
  }
  auto dp =
      mnist::Trainer::Create(client->get(), (*client)->addressable_devices());
  auto spmd = mnist::SpmdTrainer::Create(client->get(), kBatch);
  if (!dp.ok() || !spmd.ok()) {
    state.SkipWithError("could not create the trainers");
    return;
  }
  const mnist::Dataset data = mnist::FakeData(kBatch * 8, 7);
  std::vector<int> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> images;
  std::vector<int32_t> labels;
  bool ok = true;
  int step = 0;
  auto round = [&](bool use_spmd) {
    return Seconds([&] {
             for (int i = 0; i < kStepsPerRound; ++i, ++step) {
               mnist::Gather(data, order, (step % 8) * kBatch, kBatch, &images,
                             &labels);
               if (use_spmd) {
                 ok = ok && (*spmd)->Step(images, labels).ok();
               } else {
                 ok = ok && (*dp)->Step(images, labels).ok();
               }
             }
             if (use_spmd) {
               ok = ok && (*spmd)->LastLoss().ok();
             } else {
               ok = ok && (*dp)->LastLoss().ok();
             }
           }) /
           kStepsPerRound;
  };
  std::vector<double> dp_s, spmd_s;
  for (auto _ : state) {
    round(false);  // compiles
    round(true);
    for (int turn = 0; turn < kTurns; ++turn) {
      const bool first = turn % 2 == 0;
      const double a = round(first);
      const double b = round(!first);
      spmd_s.push_back(first ? a : b);
      dp_s.push_back(first ? b : a);
    }
  }
  if (!ok) {
    state.SkipWithError("a training step failed");
    return;
  }
  const double best_dp = *std::min_element(dp_s.begin(), dp_s.end());
  const double best_spmd = *std::min_element(spmd_s.begin(), spmd_s.end());
  state.counters["spmd.step_ms_vs_dp"] = best_spmd / best_dp;
  state.counters["spmd.step_ms"] = best_spmd * 1e3;
  state.counters["dp_step_ms"] = best_dp * 1e3;
  const double bytes = static_cast<double>((*spmd)->CollectiveBytesPerStep());
  const double least =
      static_cast<double>((*spmd)->MinCollectiveBytesPerStep());
  state.counters["spmd.collective_bytes_vs_min"] =
      least > 0 ? bytes / least : 0.0;
  state.counters["collective_bytes_per_step"] = bytes;
  state.counters["min_collective_bytes_per_step"] = least;
  state.counters["inserted_collectives"] =
      static_cast<double>((*spmd)->program().collectives().size());
}
BENCHMARK(BM_SpmdStepVsDataParallel)->Iterations(1)->Unit(benchmark::kSecond);

const bool kHeadlines = [] {
  RegisterHeadline("spmd.step_ms_vs_dp", "x");
  RegisterHeadline("spmd.collective_bytes_vs_min", "x");
  RegisterHeadline("spmd.step_ms", "ms");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
