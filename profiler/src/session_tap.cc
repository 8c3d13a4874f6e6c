#include "src/session_tap.h"

#include <utility>

#include "podscope/base/status_macros.h"
#include "src/thread_buffer.h"

namespace podscope::profiler::internal {

namespace tf = ::podscope::trace_format;

absl::StatusOr<std::unique_ptr<CaptureTap>> CaptureTap::Start(
    uint64_t owner, const TraceOptions& options,
    std::unique_ptr<tf::TraceWriter> writer, const ClockSkew& skew,
    const TickCalibration& calibration, bool sample) {
  std::unique_ptr<SamplingCollector> sampling;
  if (sample) {
    PODSCOPE_ASSIGN_OR_RETURN(auto collector,
                              SamplingCollector::Start(options.sampling_hz));
    sampling = std::move(collector);
    BufferRegistry::Get().ForEach([&](ThreadBuffer* b) {
      if (!b->exited.load(std::memory_order_acquire)) {
        sampling->RegisterThread(b->tid);
      }
    });
  }
  RecordingClock clock;
  clock.skew = skew;
  clock.calibration = calibration;
  const uint64_t start_ticks = Ticks();
  clock.start_ns = calibration.ToNs(start_ticks);
  clock.start_realtime_ns = RealtimeNs();
  std::unique_ptr<CaptureTap> tap(
      new CaptureTap(owner, options, std::move(writer), clock));
  tap->drainer_ = std::make_unique<SessionDrainer>(tap->writer_.get(), skew,
                                                   start_ticks, clock.start_ns);
  tap->drainer_->set_file_clock(Skewed(calibration, skew));
  tap->sampling_ = std::move(sampling);
  tap->writer_->AddClockSnapshot(skew.Apply(MonotonicNs()), RealtimeNs());
  tap->WriteMetadata();
  return tap;
}

CaptureTap::CaptureTap(uint64_t owner, const TraceOptions& options,
                       std::unique_ptr<tf::TraceWriter> writer,
                       const RecordingClock& clock)
    : owner_(owner),
      options_(options),
      writer_(std::move(writer)),
      clock_(clock) {}

void CaptureTap::WriteMetadata() {
  tf::proto::Metadata m =
      RecordingMetadata(options_, clock_, &facts_generation_);
  drainer_->MapDeviceTracks(&m);
  writer_->SetMetadata(m);
}

void CaptureTap::set_calibration(const TickCalibration& calibration) {
  clock_.calibration = calibration;
  drainer_->set_file_clock(Skewed(calibration, clock_.skew));
}

void CaptureTap::DrainSamples() {
  if (sampling_) drainer_->DrainSamples(sampling_.get());
}

void CaptureTap::AddProcessCounters(const ProcessCounterSampler::Reading& r) {
  using Sampler = ProcessCounterSampler;
  drainer_->AddCounter(Sampler::kResidentName, Sampler::kResidentUnit,
                       r.monotonic_ns, r.resident_bytes);
  if (r.cpu_percent) {
    drainer_->AddCounter(Sampler::kCpuName, Sampler::kCpuUnit, r.monotonic_ns,
                         *r.cpu_percent);
  }
}

absl::Status CaptureTap::Flush() {
  if (FactsGeneration() != facts_generation_) WriteMetadata();
  absl::Status s = writer_->Flush();
  if (!s.ok() && error_.ok()) error_ = s;
  return s;
}

absl::Status CaptureTap::Close() {
  sampling_.reset();
  writer_->AddClockSnapshot(clock_.skew.Apply(MonotonicNs()), RealtimeNs());
  WriteMetadata();
  absl::Status s = writer_->Close();
  if (s.ok()) s = error_;
  return s;
}

}  // namespace podscope::profiler::internal
