// The lean clock-probe path for processes that measure each other's
// profiler clocks (a job's ranks against rank 0): one UDP datagram each
// way, answered by a dedicated thread, with the kernel's receive times, so
// that neither gRPC's thread pool nor a descheduled thread widens the
// round trip. The profiler server's capture probes use the same packets
// (docs/profiler-service.md).
//
// Contract:
// - A ClockProbeServer answers only requests that carry its key; hand the
//   key out only over an authenticated channel (a job's coordinator).
// - Both sides read the profiler clock (ProfilerNowNs()), so a probe says
//   peer = local + offset_ns for the two processes' trace timestamps.
// - Thread-safe: one server answers any number of clients; a client is
//   used by one thread at a time.
#ifndef PODSCOPE_PROFILER_CLOCK_PROBE_H_
#define PODSCOPE_PROFILER_CLOCK_PROBE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace podscope::profiler {

class ClockProbeServer {
 public:
  // Binds `host` ("127.0.0.1", "0.0.0.0", "::", an address) on any free
  // UDP port and answers from a thread of its own until destroyed.
  static absl::StatusOr<std::unique_ptr<ClockProbeServer>> Start(
      const std::string& host);
  virtual ~ClockProbeServer() = default;
  virtual int port() const = 0;
  // The key as lowercase hex, for a client's Connect.
  virtual std::string key_hex() const = 0;
};

// One probe: the four times (t1 sent and t4 received here, t2 received and
// t3 sent by the peer, each on its own profiler clock).
struct PeerClockProbe {
  int64_t t1 = 0, t2 = 0, t3 = 0, t4 = 0;
  // Meaningful only for a probe base::CheckProbe trusts.
  int64_t round_trip_ns() const { return (t4 - t1) - (t3 - t2); }
  // peer = local + offset, at the midpoint of this side's round trip.
  int64_t offset_ns() const { return ((t2 - t1) + (t3 - t4)) / 2; }
  int64_t local_ns() const { return t1 + (t4 - t1) / 2; }
};

class ClockProbeClient {
 public:
  // A socket toward `host`:`port`; InvalidArgument for a malformed key,
  // Unavailable when the host cannot be resolved or reached.
  static absl::StatusOr<std::unique_ptr<ClockProbeClient>> Connect(
      const std::string& host, int port, const std::string& key_hex);
  virtual ~ClockProbeClient() = default;
  // Nothing when no answer came within `timeout_ms`.
  virtual std::optional<PeerClockProbe> ProbeOnce(int timeout_ms) = 0;
  // The probe with the smallest round trip of `probes` (each waiting at
  // most `timeout_ms`) whose timestamps can be trusted
  // (base::CheckProbe); nothing when none was. Probes answered with
  // timestamps that cannot be trusted are counted in discarded().
  std::optional<PeerClockProbe> BestOf(int probes, int timeout_ms);
  int64_t discarded() const { return discarded_; }

 private:
  int64_t discarded_ = 0;
};

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_CLOCK_PROBE_H_
