// Clock probes of one worker on the lean path (a UDP port the worker's
// server answers from a dedicated thread; see src/clock_probe_wire.h), and
// the fit of a straight line (offset and drift) to every probe of a
// capture. Probes through gRPC remain the fallback for servers without a
// probe port.
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_CLOCK_PROBES_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_CLOCK_PROBES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/base/clock_fit.h"
#include "podscope/profiler/capture.h"

namespace podscope::profiler::internal {

class UdpProber {
 public:
  // A socket connected to `host`'s probe port; `key` from its GetInfo.
  static absl::StatusOr<std::unique_ptr<UdpProber>> Connect(
      const std::string& host, int port, const std::string& key);
  ~UdpProber();
  UdpProber(const UdpProber&) = delete;
  UdpProber& operator=(const UdpProber&) = delete;

  // The four times of one probe: this side's send (t1) and receive (t4)
  // times on CLOCK_MONOTONIC, or on the profiler clock when
  // `profiler_clock` (ProfilerNowNs: the test skew applied), and the
  // worker's receive (t2) and send (t3) times on its profiler clock.
  struct Times {
    int64_t t1 = 0, t2 = 0, t3 = 0, t4 = 0;
  };
  std::optional<Times> ProbeTimes(int timeout_ms, bool profiler_clock);
  // The same in two halves, for many probers in flight at once: Send
  // returns the probe's send time (0 when it could not be sent); Receive
  // reads what has arrived without waiting and returns the answer to the
  // probe sent at `sent`, if it came (late answers to earlier probes are
  // skipped).
  int64_t Send();
  std::optional<Times> Receive(int64_t sent, bool profiler_clock);
  // Whether `times` can be trusted (base::CheckProbe; counted when not),
  // and its estimate.
  std::optional<ClockEstimate> Estimate(const Times& times);
  int fd() const { return fd_; }
  // One probe; nothing when no answer came within `timeout_ms` or its
  // timestamps cannot be trusted (base::CheckProbe; counted).
  std::optional<ClockEstimate> ProbeOnce(int timeout_ms = 200);
  // The probe with the smallest uncertainty of `probes`; Unavailable when
  // none was answered with timestamps that can be trusted.
  absl::StatusOr<ClockEstimate> Probe(int probes);
  // Answered probes discarded for their timestamps so far.
  int64_t discarded() const {
    return discarded_.load(std::memory_order_relaxed);
  }

 private:
  explicit UdpProber(int fd, std::string key) : fd_(fd), key_(std::move(key)) {}
  const int fd_;
  const std::string key_;
  std::atomic<int64_t> discarded_{0};
};

// The host part of "host:port" or "[v6]:port".
std::string HostOfAddress(const std::string& address);

// The estimate of one trusted probe: its interval, never below
// base::kClockCompareFloorNs.
ClockEstimate EstimateOf(const base::ClockSample& s);

// The clock of a capture from every probe of it (base::ClockFit, whose
// uncertainty is a bound): the fit at up to 64 of the probes' times, the
// first and the last included. One probe gives itself.
std::vector<ClockEstimate> FitClock(const std::vector<ClockEstimate>& probes);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_CLOCK_PROBES_H_
