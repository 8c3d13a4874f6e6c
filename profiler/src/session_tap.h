// A remote capture of a process that already records itself (StartTrace):
// instead of a second session, the running session hands what it drains
// from the capture's start until its end to the capture's own writer too,
// so the capture gets a file of its own window only, with its own
// metadata, index and trailer. The session calls it from its drain passes,
// under its drain lock; nothing here is thread-safe on its own.
#ifndef PODSCOPE_PROFILER_SRC_SESSION_TAP_H_
#define PODSCOPE_PROFILER_SRC_SESSION_TAP_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/trace_format/writer.h"
#include "src/process_counters.h"
#include "src/sampling_collector.h"
#include "src/session_drainer.h"
#include "src/session_metadata.h"

namespace podscope::profiler::internal {

class CaptureTap {
 public:
  // Records into `writer` from now on, on the session's clock (`skew`,
  // `calibration`). With `sample` (the capture asks for stack samples and
  // the session takes none), the tap runs a sampler of its own.
  static absl::StatusOr<std::unique_ptr<CaptureTap>> Start(
      uint64_t owner, const TraceOptions& options,
      std::unique_ptr<trace_format::TraceWriter> writer, const ClockSkew& skew,
      const TickCalibration& calibration, bool sample);

  uint64_t owner() const { return owner_; }
  Level level() const { return options_.level; }
  SessionDrainer* drainer() { return drainer_.get(); }

  void set_calibration(const TickCalibration& calibration);
  // Writes the samples of the tap's own sampler.
  void DrainSamples();
  void AddProcessCounters(const ProcessCounterSampler::Reading& r);
  // Flushes the writer (metadata first when the process facts changed).
  absl::Status Flush();
  // Writes the last clock snapshot, metadata, index and trailer.
  absl::Status Close();

 private:
  CaptureTap(uint64_t owner, const TraceOptions& options,
             std::unique_ptr<trace_format::TraceWriter> writer,
             const RecordingClock& clock);
  void WriteMetadata();

  const uint64_t owner_;
  const TraceOptions options_;
  std::unique_ptr<trace_format::TraceWriter> writer_;
  RecordingClock clock_;
  std::unique_ptr<SessionDrainer> drainer_;
  std::unique_ptr<SamplingCollector> sampling_;
  uint64_t facts_generation_ = 0;
  absl::Status error_;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SESSION_TAP_H_
