// Clock probes of one worker on the lean path (a UDP port the worker's
// server answers from a dedicated thread; see src/clock_probe_wire.h), and
// the fit of a straight line (offset and drift) to every probe of a
// capture. Probes through gRPC remain the fallback for servers without a
// probe port.
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_CLOCK_PROBES_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_CLOCK_PROBES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  // One probe; nothing when no answer came within `timeout_ms`.
  std::optional<ClockEstimate> ProbeOnce(int timeout_ms = 200);
  // The probe with the smallest round trip of `probes`; Unavailable when
  // none was answered.
  absl::StatusOr<ClockEstimate> Probe(int probes);

 private:
  explicit UdpProber(int fd, std::string key) : fd_(fd), key_(std::move(key)) {}
  const int fd_;
  const std::string key_;
};

// The host part of "host:port" or "[v6]:port".
std::string HostOfAddress(const std::string& address);

// A line offset(local) = offset_at_first + slope * (local - first local)
// fitted to `probes` (those within a little of the smallest round trip,
// weighted alike), evaluated at the first and last probe: two estimates
// whose uncertainty covers half the smallest round trip plus the largest
// distance of a kept probe from the line. One probe gives itself.
std::vector<ClockEstimate> FitClock(const std::vector<ClockEstimate>& probes);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_CLOCK_PROBES_H_
