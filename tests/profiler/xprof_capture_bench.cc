// `bench/run interop` (part xprof): capturing XProf servers and lining
// them up.
//   capture.xprof_hosts16_over_duration  wall time of a 1 s capture of 16
//                                        XProf test servers over the 1 s
//                                        asked for (target <= 1.5)
//   align.collectives_error_us           the worst error of a host's offset
//                                        to the others' from the collective
//                                        fit, on a synthetic 16-host pod
//                                        (ends jittered +-2 us, one host's
//                                        network 5 ms slower; target <= 5)
//   align.collectives_uncertainty_us     the largest stated bound of that
//                                        fit between hosts (never below the
//                                        error)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/headline.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "synthetic_pod.h"
#include "xprof_test_server.h"

namespace podscope::profiler {
namespace {

std::string TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("podscope-bench-xprof-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void BM_CaptureXProfHosts16(benchmark::State& state) {
  constexpr int kHosts = 16;
  std::vector<std::unique_ptr<testing::XProfTestServer>> servers;
  std::vector<std::string> addrs;
  for (int i = 0; i < kHosts; ++i) {
    testing::XProfHostOptions o;
    o.host_name = "host-" + std::to_string(i);
    o.clock_offset_ns = (i % 5 - 2) * 1'500'000;
    o.collective_jitter_ns = 500;
    o.jitter_seed = i + 1;
    o.thread_events = 5000;
    o.collectives = 40;
    servers.push_back(std::make_unique<testing::XProfTestServer>(o));
    if (!servers.back()->ok()) {
      state.SkipWithError("a test server did not start");
      return;
    }
    addrs.push_back(servers.back()->address());
  }
  double wall_s = 0;
  int answered = 0, by_collectives = 0;
  for (auto _ : state) {
    CaptureOptions o;
    o.workers = addrs;
    o.logdir = TempDir("hosts16");
    o.duration_ms = 1000;
    const int64_t t0 = MonotonicNs();
    auto result = CaptureWorkers(o);
    wall_s = static_cast<double>(MonotonicNs() - t0) / 1e9;
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    answered = result->answered();
    by_collectives = 0;
    for (const WorkerResult& w : result->workers) {
      by_collectives += w.alignment == "collectives";
    }
  }
  state.counters["hosts_answered"] = answered;
  state.counters["hosts_aligned_by_collectives"] = by_collectives;
  state.counters["capture.xprof_hosts16_over_duration"] = wall_s / 1.0;
}
BENCHMARK(BM_CaptureXProfHosts16)->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_AlignCollectives16(benchmark::State& state) {
  double worst_error_us = 0, worst_bound_us = 0;
  int understated = 0;
  for (auto _ : state) {
    worst_error_us = worst_bound_us = 0;
    understated = 0;
    // Several pods: the worst over them.
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      testing::PodShape shape;
      shape.seed = seed;
      const testing::SyntheticPod pod = testing::MakeSyntheticPod(shape);
      const auto aligned = internal::AlignHosts(pod.inputs);
      for (size_t h = 0; h < aligned.size(); ++h) {
        if (aligned[h].method != internal::AlignMethod::kCollectives) {
          state.SkipWithError(aligned[h].note.c_str());
          return;
        }
        const int64_t error = (aligned[h].offset_ns - aligned[0].offset_ns) -
                              (pod.truth[h] - pod.truth[0]);
        const int64_t bound = aligned[h].relative_uncertainty_ns +
                              aligned[0].relative_uncertainty_ns;
        understated += std::llabs(error) > bound;
        worst_error_us = std::max(worst_error_us, std::llabs(error) / 1e3);
        worst_bound_us = std::max(worst_bound_us, bound / 1e3);
      }
    }
  }
  state.counters["understated_hosts"] = understated;
  state.counters["align.collectives_error_us"] = worst_error_us;
  state.counters["align.collectives_uncertainty_us"] = worst_bound_us;
}
BENCHMARK(BM_AlignCollectives16)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace podscope::profiler

int main(int argc, char** argv) {
  using podscope::bench::RegisterHeadline;
  RegisterHeadline("capture.xprof_hosts16_over_duration", "ratio");
  RegisterHeadline("align.collectives_error_us", "us");
  RegisterHeadline("align.collectives_uncertainty_us", "us");
  return podscope::bench::RunBenchmarksWithHeadlines(argc, argv);
}
