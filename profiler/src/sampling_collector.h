// Connects the CPU stack sampler to a session: samples every thread of the
// process (those that record events and those that never do, such as a
// math library's worker pool), and turns drained samples into the file's
// interned frames, stacks and per-thread samples.
#ifndef PODSCOPE_PROFILER_SRC_SAMPLING_COLLECTOR_H_
#define PODSCOPE_PROFILER_SRC_SAMPLING_COLLECTOR_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/writer.h"
#include "src/sampling/stack_sampler.h"
#include "src/sampling/symbolizer.h"

namespace podscope::profiler::internal {

class SamplingCollector {
 public:
  // Starts sampling at `rate_hz`; registers threads as RegisterThread is
  // called. Only one collector may run at a time.
  static absl::StatusOr<std::unique_ptr<SamplingCollector>> Start(int rate_hz);
  ~SamplingCollector();

  // Samples thread `tid` (any thread may call this for any thread).
  void RegisterThread(pid_t tid);

  // Samples every live thread listed in /proc/self/task that is not yet
  // sampled. Start() and each Drain() call it, so a thread that never
  // records is sampled from the drain pass after it was born.
  void RegisterProcessThreads();

  // Writes the samples taken so far (first registering threads born since
  // the last call); `track_of` gives the track of a thread id (0 to skip
  // the sample). Sample times go through `skew`.
  // `accept` (may be empty) says whether a sample taken at a monotonic
  // time belongs in the file (a capture's window).
  void Drain(trace_format::TraceWriter* writer, const ClockSkew& skew,
             const std::function<uint32_t(pid_t)>& track_of,
             const std::function<bool(int64_t)>& accept = {});

  uint64_t dropped() const;

  // The collector that new threads register with, if any.
  static void RegisterWithActive(pid_t tid);

 private:
  SamplingCollector() = default;
  uint32_t FrameId(trace_format::TraceWriter* writer, uint64_t address,
                   bool leaf);

  std::unique_ptr<sampling::StackSampler> sampler_;
  sampling::Symbolizer symbolizer_;
  // Caches: address -> file frame id, stack (as frame ids) -> stack id.
  absl::flat_hash_map<uint64_t, uint32_t> frames_;
  absl::flat_hash_map<std::string, uint32_t> stacks_;
  std::vector<pid_t> listed_;  // RegisterProcessThreads' listing, reused
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SAMPLING_COLLECTOR_H_
