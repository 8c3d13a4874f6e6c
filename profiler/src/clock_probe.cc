// The public clock-probe path (clock_probe.h) over the profiler server's
// probe responder and the capture client's UDP prober.
#include "podscope/profiler/clock_probe.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/escaping.h"
#include "podscope/base/clock_fit.h"
#include "podscope/base/status_macros.h"
#include "src/capture/clock_probes.h"
#include "src/clock_probe_wire.h"
#include "src/server/probe_responder.h"

namespace podscope::profiler {
namespace {

class ServerImpl : public ClockProbeServer {
 public:
  explicit ServerImpl(std::unique_ptr<internal::ProbeResponder> r)
      : responder_(std::move(r)) {}
  int port() const override { return responder_->port(); }
  std::string key_hex() const override {
    return absl::BytesToHexString(responder_->key());
  }

 private:
  std::unique_ptr<internal::ProbeResponder> responder_;
};

class ClientImpl : public ClockProbeClient {
 public:
  explicit ClientImpl(std::unique_ptr<internal::UdpProber> p)
      : prober_(std::move(p)) {}
  std::optional<PeerClockProbe> ProbeOnce(int timeout_ms) override {
    auto t = prober_->ProbeTimes(timeout_ms, /*profiler_clock=*/true);
    if (!t) return std::nullopt;
    return PeerClockProbe{t->t1, t->t2, t->t3, t->t4};
  }

 private:
  std::unique_ptr<internal::UdpProber> prober_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ClockProbeServer>> ClockProbeServer::Start(
    const std::string& host) {
  PODSCOPE_ASSIGN_OR_RETURN(auto responder,
                            internal::ProbeResponder::Start(host));
  return std::unique_ptr<ClockProbeServer>(
      new ServerImpl(std::move(responder)));
}

absl::StatusOr<std::unique_ptr<ClockProbeClient>> ClockProbeClient::Connect(
    const std::string& host, int port, const std::string& key_hex) {
  const bool hex = key_hex.size() == 2 * internal::kProbeKeyBytes &&
                   std::all_of(key_hex.begin(), key_hex.end(), [](char c) {
                     return std::isxdigit(static_cast<unsigned char>(c));
                   });
  if (!hex) {
    return absl::InvalidArgumentError(
        "clock probes: the key is not " +
        std::to_string(2 * internal::kProbeKeyBytes) + " hex digits");
  }
  PODSCOPE_ASSIGN_OR_RETURN(auto prober,
                            internal::UdpProber::Connect(
                                host, port, absl::HexStringToBytes(key_hex)));
  return std::unique_ptr<ClockProbeClient>(new ClientImpl(std::move(prober)));
}

std::optional<PeerClockProbe> ClockProbeClient::BestOf(int probes,
                                                       int timeout_ms) {
  std::optional<PeerClockProbe> best;
  for (int i = 0; i < probes; ++i) {
    auto p = ProbeOnce(timeout_ms);
    if (!p) continue;
    if (base::CheckProbe({p->t1, p->t2, p->t3, p->t4}) !=
        base::ProbeFault::kNone) {
      ++discarded_;
      continue;
    }
    if (!best || p->round_trip_ns() < best->round_trip_ns()) best = p;
  }
  return best;
}

}  // namespace podscope::profiler
