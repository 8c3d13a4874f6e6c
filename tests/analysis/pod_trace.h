// Writes per-rank trace files with the real TraceWriter for the pod
// analysis tests and benchmark: slices, instants and counters with typed
// arguments, metadata attributes, tracks of each kind.
#ifndef PODSCOPE_TESTS_ANALYSIS_POD_TRACE_H_
#define PODSCOPE_TESTS_ANALYSIS_POD_TRACE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "podscope/trace_format/writer.h"

namespace podscope::analysis_testing {

using ArgValue = std::variant<int64_t, double, std::string>;
using Args = std::vector<std::pair<std::string, ArgValue>>;

class RankTrace {
 public:
  // A file for one process: `rank` of `ranks` on `host`.
  static absl::StatusOr<std::unique_ptr<RankTrace>> Create(
      const std::string& path, const std::string& host, int rank, int ranks,
      const std::map<std::string, std::string>& attributes = {});

  uint32_t Thread(const std::string& name);
  uint32_t Device(const std::string& name, int32_t device_id,
                  int32_t stream_id = 0);
  uint32_t Counter(const std::string& name);

  // A slice; `flow`/`phase` (when flow != 0) put it on a flow.
  void Slice(uint32_t track, int64_t start, int64_t duration,
             const std::string& name, const Args& args = {}, uint64_t flow = 0,
             trace_format::FlowPhase phase = trace_format::FlowPhase::kBegin);
  void Instant(uint32_t track, int64_t ts, const std::string& name,
               const Args& args = {});
  void CounterValue(uint32_t track, int64_t ts, double v);

  absl::Status Close();

 private:
  explicit RankTrace(std::unique_ptr<trace_format::TraceWriter> w)
      : w_(std::move(w)) {}
  std::vector<trace_format::Arg> Convert(const Args& args);
  std::unique_ptr<trace_format::TraceWriter> w_;
  int64_t tid_ = 100;
};

// A fresh empty folder under the test temp dir.
std::string FreshDir(const std::string& name);

// Three ranks (host0..2), four steps (`train_step`, step 0..3, 900 us
// apart by 1 ms); rank 2's `forward` takes 500 us instead of 300 us, so it
// reaches every AllReduce (collective_id grads#k) 200 us after the others.
// Returns the session folder ("" when writing failed).
std::string WriteStragglerSession(const std::string& name);

// A job of `ranks` ranks whose collectives are synchronous, as the
// runtime's are: `steps` steps (`train_step`, arg step) of `per_step`
// compute segments, each ending in an `all_reduce` (collective_id
// "world#k") on the rank's device stream. A rank arrives at collective k
// `compute_ns(rank, k)` after collective k-1 ended; every collective ends
// 200 µs after its last arrival and records each rank's wait (`wait_ns`).
// A step runs from the end of the previous step's last collective to the
// end of its own. Returns the session folder ("" when writing failed).
std::string WriteSynchronousJob(
    const std::string& name, int ranks, int steps, int per_step,
    const std::function<int64_t(int rank, int collective)>& compute_ns);

// A data-parallel training job for the diff tests and benchmark: each of
// `steps` steps (`train_step`, arg step) on each rank runs `loader_next`
// (data loading) on the main thread, then `forward` with the device ops
// `conv2d` and `matmul` on the rank's stream, then an `all_reduce`
// (collective_id "world#<step>") that ends 200 µs after the last rank
// arrives. Durations are 0.5 ms (loader), 2 ms (conv2d) and 1 ms
// (matmul), times `scale(rank, step, op)`, times a jitter drawn from
// [1 - noise, 1 + noise] by a generator seeded with `seed`. Step 0 starts
// with a `Compile` that misses the cache (signature "f32[32,784]"); with
// `recompile_at` >= 0 that step starts with another miss, of signature
// "f32[17,784]". A non-empty `extra_scope` adds a 100 µs host scope of
// that name before the loader in every step. Returns the session folder
// ("" when writing failed).
struct TrainingJobShape {
  int ranks = 4;
  int steps = 40;
  uint64_t seed = 1;
  double noise = 0.03;
  std::function<double(int rank, int step, const std::string& op)> scale;
  int recompile_at = -1;
  std::string extra_scope;
};
std::string WriteTrainingJob(const std::string& name,
                             const TrainingJobShape& shape);

// One rank whose recorded machine peak (10 GFLOP/s, 1 GB/s, "cached") is
// below what its kernels reached: `dense/dot` (op dot) at 20 GFLOP/s and
// `relu/fusion` (op fusion) at 4 GB/s.
std::string WriteLowPeakSession(const std::string& name);

}  // namespace podscope::analysis_testing

#endif  // PODSCOPE_TESTS_ANALYSIS_POD_TRACE_H_
