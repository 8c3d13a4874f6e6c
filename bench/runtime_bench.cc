// bench/run runtime: the runtime's kernels against Eigen called directly in
// the same run (GEMM, convolution), the cost of dispatching an op, and a
// training step of examples/train_mnist with and without a capture.
//
// Reference and runtime are measured in alternating rounds; a figure takes
// the best round of each (the least disturbed by other work on the
// machine).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#define EIGEN_USE_THREADS
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "common/headline.h"
#include "mnist/data.h"
#include "mnist/trainer.h"
#include "podscope/base/numeric.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/pjrt/client.h"
#include "podscope/trace_format/reader.h"
#include "unsupported/Eigen/CXX11/Tensor"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace podscope::bench {
namespace {

namespace rt = podscope::runtime;

double Seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// Best seconds per call of `runtime_fn` and `reference_fn`, measured in
// `rounds` alternating rounds of `calls` calls each.
std::pair<double, double> BestOfAlternating(
    int rounds, int calls, const std::function<void()>& runtime_fn,
    const std::function<void()>& reference_fn) {
  double best_runtime = 1e30, best_reference = 1e30;
  for (int round = 0; round < rounds; ++round) {
    best_runtime = std::min(best_runtime, Seconds([&] {
                                            for (int i = 0; i < calls; ++i)
                                              runtime_fn();
                                          }) / calls);
    best_reference = std::min(best_reference, Seconds([&] {
                                                for (int i = 0; i < calls; ++i)
                                                  reference_fn();
                                              }) / calls);
  }
  return {best_runtime, best_reference};
}

// A compiled one-output graph with its arguments already on the device.
struct Prepared {
  std::unique_ptr<rt::Client> client;
  rt::Device* device = nullptr;
  std::shared_ptr<rt::Executable> executable;
  std::vector<rt::BufferPtr> arguments;

  // Executes once and waits for the result.
  bool Run() const {
    auto outputs = executable->Execute(arguments, device);
    return outputs.ok() && (*outputs)[0]->Await().ok();
  }
  std::vector<float> Output() const {
    auto outputs = executable->Execute(arguments, device);
    if (!outputs.ok()) return {};
    auto literal = (*outputs)[0]->ToLiteral().Await();
    return literal.ok() ? literal->ToVector<float>() : std::vector<float>();
  }
};

absl::StatusOr<Prepared> Prepare(const rt::GraphBuilder& builder,
                                 rt::Value output,
                                 const std::vector<rt::Literal>& arguments) {
  Prepared p;
  PODSCOPE_ASSIGN_OR_RETURN(auto client, rt::CreateClient(rt::ClientOptions()));
  p.client = std::move(client);
  p.device = p.client->addressable_devices()[0];
  PODSCOPE_ASSIGN_OR_RETURN(auto graph, builder.Build({output}));
  PODSCOPE_ASSIGN_OR_RETURN(auto executable, p.client->Compile(graph));
  p.executable = std::move(executable);
  for (const rt::Literal& literal : arguments) {
    PODSCOPE_ASSIGN_OR_RETURN(auto buffer,
                              p.client->BufferFromLiteral(literal, p.device));
    if (absl::Status s = buffer->Await(); !s.ok()) return s;
    p.arguments.push_back(std::move(buffer));
  }
  return p;
}

rt::Literal Random(std::vector<int64_t> dims, std::mt19937& rng) {
  rt::Literal literal(rt::F32Shape(std::move(dims)));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : literal.mutable_data<float>()) v = dist(rng);
  return literal;
}

// Eigen with as many threads as the runtime's intra-op pool (one per core).
struct EigenThreads {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  Eigen::ThreadPool pool{std::max(1, threads)};
  Eigen::ThreadPoolDevice device{&pool, std::max(1, threads)};
};

bool Close(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::abs(a[i] - b[i]) > 1e-3f * std::max(1.0f, std::abs(b[i]))) {
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------- GEMM

void BM_GemmVsEigen(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::mt19937 rng(1);
  const rt::Literal a = Random({n, n}, rng);
  const rt::Literal b = Random({n, n}, rng);
  rt::GraphBuilder builder("gemm");
  rt::Value pa = builder.Parameter(a.shape());
  rt::Value pb = builder.Parameter(b.shape());
  auto prepared = Prepare(builder, builder.Dot(pa, pb), {a, b});
  if (!prepared.ok()) {
    state.SkipWithError(prepared.status().ToString().c_str());
    return;
  }
  EigenThreads eigen;
  using Matrix = Eigen::Tensor<float, 2, Eigen::RowMajor>;
  using ConstMap = Eigen::TensorMap<const Matrix>;
  ConstMap ea(a.data<float>().data(), n, n);
  ConstMap eb(b.data<float>().data(), n, n);
  Matrix ec(n, n);
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {
      Eigen::IndexPair<int>(1, 0)};
  auto reference = [&] { ec.device(eigen.device) = ea.contract(eb, dims); };
  reference();
  if (!Close(prepared->Output(),
             std::vector<float>(ec.data(), ec.data() + n * n))) {
    state.SkipWithError("runtime and Eigen products differ");
    return;
  }
  std::pair<double, double> best;
  for (auto _ : state) {
    best = BestOfAlternating(
        7, std::max<int>(4, (1 << 28) / (n * n * n)), [&] { prepared->Run(); },
        reference);
  }
  const double flops = 2.0 * n * n * n;
  state.counters["runtime_gflops"] = flops / best.first / 1e9;
  state.counters["eigen_gflops"] = flops / best.second / 1e9;
  state.counters["runtime.gemm_ratio_vs_eigen"] = best.second / best.first;
}
BENCHMARK(BM_GemmVsEigen)
    ->Arg(512)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------- convolution

// The runtime's NCHW conv2d against Eigen's own spatial convolution:
// patches (extract_image_patches) contracted with the filter, the way
// TensorFlow's CPU convolution uses Eigen, on the same data in Eigen's
// column-major (C, H, W, N) layout. The patches are contracted either as an
// expression or materialized first; the faster is the reference.
void BM_ConvVsEigen(benchmark::State& state) {
  const int64_t batch = state.range(0);
  // examples/train_mnist's second convolution: 32 -> 64 channels, 3x3.
  const int64_t c = 32, h = 26, w = 26, o = 64, k = 3;
  const int64_t oh = h - k + 1, ow = w - k + 1;
  std::mt19937 rng(2);
  const rt::Literal x = Random({batch, c, h, w}, rng);
  const rt::Literal f = Random({o, c, k, k}, rng);
  rt::GraphBuilder builder("conv");
  rt::Value px = builder.Parameter(x.shape());
  rt::Value pf = builder.Parameter(f.shape());
  auto prepared = Prepare(builder, builder.Conv2D(px, pf), {x, f});
  if (!prepared.ok()) {
    state.SkipWithError(prepared.status().ToString().c_str());
    return;
  }

  EigenThreads eigen;
  Eigen::Tensor<float, 4> input(c, h, w, batch);  // column-major
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t xx = 0; xx < w; ++xx)
          input(ci, y, xx, n) =
              x.data<float>()[((n * c + ci) * h + y) * w + xx];
  // kernel(o, (ci, ky, kx)) with ci fastest, matching the patch layout.
  Eigen::Tensor<float, 2> kernel(o, c * k * k);
  for (int64_t oi = 0; oi < o; ++oi)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t ky = 0; ky < k; ++ky)
        for (int64_t kx = 0; kx < k; ++kx)
          kernel(oi, ci + c * (ky + k * kx)) =
              f.data<float>()[((oi * c + ci) * k + ky) * k + kx];
  const Eigen::array<Eigen::Index, 2> patch_matrix = {c * k * k,
                                                      oh * ow * batch};
  const Eigen::array<Eigen::IndexPair<int>, 1> contract_dims = {
      Eigen::IndexPair<int>(1, 0)};
  Eigen::Tensor<float, 2> result(o, oh * ow * batch);
  Eigen::Tensor<float, 2> patches(c * k * k, oh * ow * batch);
  auto fused = [&] {
    result.device(eigen.device) = kernel.contract(
        input.extract_image_patches(k, k, 1, 1, 1, 1, Eigen::PADDING_VALID)
            .reshape(patch_matrix),
        contract_dims);
  };
  auto materialized = [&] {
    patches.device(eigen.device) =
        input.extract_image_patches(k, k, 1, 1, 1, 1, Eigen::PADDING_VALID)
            .reshape(patch_matrix);
    result.device(eigen.device) = kernel.contract(patches, contract_dims);
  };
  // Check the reference against the runtime: result(o, y + oh*(x + ow*n)).
  fused();
  const std::vector<float> runtime_out = prepared->Output();
  std::vector<float> reference_out(runtime_out.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t oi = 0; oi < o; ++oi)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx)
          reference_out[((n * o + oi) * oh + y) * ow + xx] =
              result(oi, y + oh * (xx + ow * n));
  if (!Close(runtime_out, reference_out)) {
    state.SkipWithError("runtime and Eigen convolutions differ");
    return;
  }
  double runtime_s = 0, fused_s = 0, materialized_s = 0;
  for (auto _ : state) {
    auto [r1, e1] = BestOfAlternating(
        5, 3, [&] { prepared->Run(); }, fused);
    auto [r2, e2] = BestOfAlternating(
        5, 3, [&] { prepared->Run(); }, materialized);
    runtime_s = std::min(r1, r2);
    fused_s = e1;
    materialized_s = e2;
  }
  const double reference_s = std::min(fused_s, materialized_s);
  const double flops = 2.0 * batch * o * oh * ow * c * k * k;
  state.counters["runtime_gflops"] = flops / runtime_s / 1e9;
  state.counters["eigen_fused_gflops"] = flops / fused_s / 1e9;
  state.counters["eigen_materialized_gflops"] = flops / materialized_s / 1e9;
  state.counters["runtime.conv_ratio_vs_eigen"] = reference_s / runtime_s;
}
BENCHMARK(BM_ConvVsEigen)
    ->Arg(32)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------- dispatch

// A chain of `ops` transposes of f32[2,2] (each its own kernel; elementwise
// ops would fuse), executed and awaited.
absl::StatusOr<Prepared> TransposeChain(int ops) {
  rt::GraphBuilder builder("dispatch");
  rt::Value v = builder.Parameter(rt::F32Shape({2, 2}));
  for (int i = 0; i < ops; ++i) v = builder.Transpose(v, {1, 0});
  std::mt19937 rng(3);
  return Prepare(builder, v, {Random({2, 2}, rng)});
}

void BM_OpDispatch(benchmark::State& state) {
  constexpr int kOps = 64;
  auto one = TransposeChain(1);
  auto many = TransposeChain(1 + kOps);
  if (!one.ok() || !many.ok()) {
    state.SkipWithError("cannot prepare the transpose chains");
    return;
  }
  if (many->executable->stats().num_kernels != 1 + kOps) {
    state.SkipWithError("the transposes were not kept as separate kernels");
    return;
  }
  std::pair<double, double> best;
  for (auto _ : state) {
    best = BestOfAlternating(
        9, 2000, [&] { many->Run(); }, [&] { one->Run(); });
  }
  // The difference cancels the per-execution cost: launch, stream hand-off,
  // output allocation and waiting for the result.
  state.counters["runtime.op_dispatch_us"] =
      (best.first - best.second) / kOps * 1e6;
  state.counters["runtime.execute_roundtrip_us"] = best.second * 1e6;
}
BENCHMARK(BM_OpDispatch)->Iterations(1)->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------- training

std::string TempDir(const char* what) {
  auto dir = std::filesystem::temp_directory_path() /
             ("podscope-bench-" + std::to_string(getpid()) + "-" + what);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// CPU seconds used by the process so far (all threads, user and system).
double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The f32 GEMM rate of Eigen on every core at the shapes that dominate
// train_mnist's step (its convolutions as im2col products: 64 x 288 by
// 288 x pixels, the gradients' transposed forms) and a square 512 product,
// FLOP/s: the best of rounds that run them all.
class GemmReference {
 public:
  GemmReference() {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (const Shape& s : kShapes) {
      a_.emplace_back(s.m * s.k);
      b_.emplace_back(s.k * s.n);
      c_.emplace_back(s.m * s.n);
      for (float& v : a_.back()) v = dist(rng);
      for (float& v : b_.back()) v = dist(rng);
    }
  }
  // One round: each shape 18 times (about a second, like a round of train
  // steps, so that both see the machine's load alike); keeps the best
  // round's rate.
  void Round() {
    using ConstMap =
        Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>>;
    using Map = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
    const Eigen::array<Eigen::IndexPair<int>, 1> dims = {
        Eigen::IndexPair<int>(1, 0)};
    double flops = 0;
    const double seconds = Seconds([&] {
      for (size_t i = 0; i < std::size(kShapes); ++i) {
        const Shape& s = kShapes[i];
        ConstMap a(a_[i].data(), s.m, s.k);
        ConstMap b(b_[i].data(), s.k, s.n);
        Map c(c_[i].data(), s.m, s.n);
        for (int rep = 0; rep < 18; ++rep) {
          const double one =
              Seconds([&] { c.device(eigen_.device) = a.contract(b, dims); });
          flops += 2.0 * s.m * s.n * s.k;
          best_single_ = std::max(best_single_, 2.0 * s.m * s.n * s.k / one);
        }
      }
    });
    best_ = std::max(best_, flops / seconds);
  }
  double best_flops_per_second() const { return best_; }
  // The best single product: a burst of a few ms, which on a busy machine
  // is more often undisturbed than a whole round.
  double best_single_flops_per_second() const { return best_single_; }

 private:
  struct Shape {
    int64_t m, k, n;
  };
  static constexpr Shape kShapes[] = {
      {64, 288, 16 * 576},  // conv2 forward, 16 images
      {288, 64, 16 * 576},  // conv2 input gradient
      {64, 16 * 576, 288},  // conv2 filter gradient
      {512, 512, 512},
  };
  EigenThreads eigen_;
  std::vector<std::vector<float>> a_, b_, c_;
  double best_ = 0;
  double best_single_ = 0;
};

// Per kernel kind of one traced step: flops and device time.
struct StepProfile {
  double flops = 0;
  std::map<std::string, std::pair<double, double>> by_op;  // flops, seconds
};

// The `flops` of every kernel on the device stream tracks of the trace at
// `path` (see docs/runtime.md), by op kind.
StepProfile ProfileOf(const std::string& path) {
  StepProfile profile;
  auto reader = trace_format::TraceReader::Open(path);
  if (!reader.ok()) return profile;
  for (const trace_format::TrackEvents& events : (*reader)->ReadAllTracks(1)) {
    const auto* track = (*reader)->FindTrack(events.track_id);
    if (track == nullptr ||
        track->kind() != trace_format::proto::TRACK_KIND_DEVICE_STREAM ||
        track->stream_id() != 0) {
      continue;
    }
    for (uint32_t i = 0; i < events.slices.size(); ++i) {
      const auto* args = events.FindArgs(trace_format::EventKind::kSlice,
                                         static_cast<uint32_t>(i));
      if (args == nullptr) continue;
      double flops = 0;
      std::string op;
      for (const trace_format::Arg& a : args->args) {
        const std::string_view key = (*reader)->GetString(a.key);
        if (key == "flops") {
          if (const auto* v = std::get_if<int64_t>(&a.value)) flops = *v;
        } else if (key == "op") {
          if (const auto* v = std::get_if<trace_format::StringId>(&a.value)) {
            op = std::string((*reader)->GetString(v->id));
          }
        }
      }
      if (op.empty()) continue;
      profile.flops += flops;
      auto& [op_flops, seconds] = profile.by_op[op];
      op_flops += flops;
      seconds += events.slices[i].duration_ns / 1e9;
    }
  }
  return profile;
}

// The step times (seconds) of every round and the CPU seconds over all
// rounds, by kind: 0 without a capture, 1 with a default capture, 2 with
// stack sampling added.
struct TrainRounds {
  std::vector<double> plain, traced, sampled;
  double cpu[3] = {0, 0, 0};
};

// BM_TrainStep's counters from its rounds, the traced step's profile and
// the GEMM reference.
void ReportTrainStep(const TrainRounds& rounds, const StepProfile& profile,
                     const GemmReference& gemm, benchmark::State& state) {
  const std::vector<double>& plain = rounds.plain;
  const std::vector<double>& traced = rounds.traced;
  const std::vector<double>& sampled = rounds.sampled;
  const double* cpu = rounds.cpu;
  // Headlines from the best round of each kind, the least disturbed by the
  // machine's other work (as the other figures here); the medians of the
  // per-turn ratios are kept beside them to show the spread.
  const double best_plain = *std::min_element(plain.begin(), plain.end());
  state.counters["train.step_ms"] = best_plain * 1e3;
  state.counters["train.profiling_overhead_pct"] =
      (*std::min_element(traced.begin(), traced.end()) / best_plain - 1.0) *
      100.0;
  state.counters["train.profiling_overhead_sampling_pct"] =
      (*std::min_element(sampled.begin(), sampled.end()) / best_plain - 1.0) *
      100.0;
  state.counters["median_step_ms"] = base::Median(plain) * 1e3;
  // The step's arithmetic rate against Eigen's GEMM rate on this machine,
  // both the best of their rounds.
  const double step_rate = profile.flops / best_plain;
  state.counters["train.flops_ratio_vs_gemm"] =
      step_rate / gemm.best_flops_per_second() * 100.0;
  state.counters["step_gflop"] = profile.flops / 1e9;
  state.counters["step_gflops"] = step_rate / 1e9;
  state.counters["gemm_gflops"] = gemm.best_flops_per_second() / 1e9;
  state.counters["gemm_best_single_gflops"] =
      gemm.best_single_flops_per_second() / 1e9;
  state.counters["flops_ratio_vs_best_single_gemm_pct"] =
      step_rate / gemm.best_single_flops_per_second() * 100.0;
  // Where the traced step's device time went, by kernel kind (also in the
  // JSON): its share of the kernels' time and its rate in GFLOP/s.
  double kernel_seconds = 0;
  for (const auto& [op, fs] : profile.by_op) kernel_seconds += fs.second;
  for (const auto& [op, fs] : profile.by_op) {
    state.counters["time_pct." + op] = fs.second / kernel_seconds * 100.0;
    state.counters["gflops." + op] =
        fs.second > 0 ? fs.first / fs.second / 1e9 : 0;
  }
  state.counters["kernel_time_pct_of_step"] =
      kernel_seconds / best_plain * 100.0;
  std::vector<double> traced_ratio, sampled_ratio;
  for (size_t i = 0; i < plain.size(); ++i) {
    traced_ratio.push_back(traced[i] / plain[i]);
    sampled_ratio.push_back(sampled[i] / plain[i]);
  }
  state.counters["median_turn_overhead_pct"] =
      (base::Median(traced_ratio) - 1.0) * 100.0;
  state.counters["median_turn_overhead_sampling_pct"] =
      (base::Median(sampled_ratio) - 1.0) * 100.0;
  // The CPU the process spent, all threads (the capture's writer and
  // sampler included): steadier than wall time when other work shares the
  // machine.
  state.counters["cpu_overhead_pct"] = (cpu[1] / cpu[0] - 1.0) * 100.0;
  state.counters["cpu_overhead_sampling_pct"] = (cpu[2] / cpu[0] - 1.0) * 100.0;
}

// examples/train_mnist's step (batch 256, one device, synthetic images)
// without a capture, with a default capture (host scopes, device ops and
// transfers, runtime and process counters; what `podscope capture` records
// unless asked for samples) and with stack sampling added at 997 Hz, as
// train_mnist records. Rounds of the three kinds take turns, in a rotating
// order so that drift affects all kinds alike.
void BM_TrainStep(benchmark::State& state) {
  constexpr int kBatch = 256;
  constexpr int kStepsPerRound = 2;
  constexpr int kTurns = 9;
  auto client = rt::CreateClient(rt::ClientOptions());
  if (!client.ok()) {
    state.SkipWithError(client.status().ToString().c_str());
    return;
  }
  auto trainer = mnist::Trainer::Create(client->get(),
                                        {(*client)->addressable_devices()[0]});
  if (!trainer.ok()) {
    state.SkipWithError(trainer.status().ToString().c_str());
    return;
  }
  const mnist::Dataset data = mnist::FakeData(kBatch * 4, 7);
  std::vector<int> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> images;
  std::vector<int32_t> labels;
  int step = 0;
  bool ok = true;
  const std::string dir = TempDir("train");
  profiler::TraceOptions sampling;
  sampling.sampling_hz = 997;
  TrainRounds rounds;
  auto round = [&](int kind) {
    if (kind > 0) {
      ok = ok && profiler::StartTrace(
                     dir, kind == 2 ? sampling : profiler::TraceOptions())
                     .ok();
    }
    const double cpu_start = ProcessCpuSeconds();
    const double seconds =
        Seconds([&] {
          for (int i = 0; i < kStepsPerRound; ++i, ++step) {
            mnist::Gather(data, order, step * kBatch, kBatch, &images, &labels);
            ok = ok && (*trainer)->Step(images, labels).ok();
          }
          ok = ok && (*trainer)->LastLoss().ok();
        }) /
        kStepsPerRound;
    rounds.cpu[kind] += ProcessCpuSeconds() - cpu_start;
    if (kind > 0) ok = ok && profiler::StopTrace().ok();
    return seconds;
  };
  GemmReference gemm;
  StepProfile profile;
  for (auto _ : state) {
    round(0);  // compiles the step's graphs
    rounds.cpu[0] = 0;
    // One traced step: the kernels' flops (op_cost.h) from the trace.
    const std::string profile_dir = TempDir("train-flops");
    ok = ok && profiler::StartTrace(profile_dir).ok();
    mnist::Gather(data, order, step * kBatch, kBatch, &images, &labels);
    ++step;
    ok = ok && (*trainer)->Step(images, labels).ok();
    ok = ok && (*trainer)->LastLoss().ok();
    auto path = profiler::StopTrace();
    ok = ok && path.ok();
    if (path.ok()) profile = ProfileOf(*path);
    std::filesystem::remove_all(profile_dir);
    for (int turn = 0; turn < kTurns; ++turn) {
      double seconds[3];
      for (int k = 0; k < 3; ++k) {
        const int kind = (turn + k) % 3;
        seconds[kind] = round(kind);
      }
      gemm.Round();
      rounds.plain.push_back(seconds[0]);
      rounds.traced.push_back(seconds[1]);
      rounds.sampled.push_back(seconds[2]);
    }
  }
  std::filesystem::remove_all(dir);
  if (profile.flops <= 0) ok = false;
  if (!ok) {
    state.SkipWithError("a training step or the capture failed");
    return;
  }
  ReportTrainStep(rounds, profile, gemm, state);
}
BENCHMARK(BM_TrainStep)->Iterations(1)->Unit(benchmark::kSecond);

const bool kHeadlines = [] {
  RegisterHeadline("runtime.gemm_ratio_vs_eigen", "x");
  RegisterHeadline("runtime.conv_ratio_vs_eigen", "x");
  RegisterHeadline("runtime.op_dispatch_us", "us");
  RegisterHeadline("runtime.execute_roundtrip_us", "us");
  RegisterHeadline("train.step_ms", "ms");
  // The profiling-overhead headlines come from bench_runtime_overhead
  // (overhead_bench.cc): interleaved pairs rather than best rounds.
  RegisterHeadline("train.flops_ratio_vs_gemm", "%");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
