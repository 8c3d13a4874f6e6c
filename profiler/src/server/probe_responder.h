// Answers clock probes on a UDP port of its own, from a dedicated thread
// (clock_probe_wire.h has the packets): a probe skips gRPC's thread pool,
// HTTP/2 framing and TLS, and its receive time is the kernel's, so the
// round trip and the asymmetry of the server's side stay in the tens of
// microseconds on a loaded machine. Only requests carrying the key (handed
// out by the token-checked GetInfo) are answered; others are dropped.
#ifndef PODSCOPE_PROFILER_SRC_SERVER_PROBE_RESPONDER_H_
#define PODSCOPE_PROFILER_SRC_SERVER_PROBE_RESPONDER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace podscope::profiler::internal {

class ProbeResponder {
 public:
  // Binds `host` (an address, as the gRPC server's; "0.0.0.0" or "::" for
  // every interface) on any free UDP port.
  static absl::StatusOr<std::unique_ptr<ProbeResponder>> Start(
      const std::string& host);
  ~ProbeResponder();
  ProbeResponder(const ProbeResponder&) = delete;
  ProbeResponder& operator=(const ProbeResponder&) = delete;

  int port() const { return port_; }
  const std::string& key() const { return key_; }

 private:
  ProbeResponder(int fd, int port, std::string key);
  void Run();

  const int fd_;
  const int port_;
  const std::string key_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SERVER_PROBE_RESPONDER_H_
