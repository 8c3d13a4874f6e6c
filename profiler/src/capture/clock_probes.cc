#include "src/capture/clock_probes.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "podscope/base/clock_fit.h"
#include "podscope/profiler/clock.h"
#include "src/clock_probe_wire.h"

namespace podscope::profiler::internal {

std::string HostOfAddress(const std::string& address) {
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    return close == std::string::npos ? address : address.substr(1, close - 1);
  }
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

absl::StatusOr<std::unique_ptr<UdpProber>> UdpProber::Connect(
    const std::string& host, int port, const std::string& key) {
  if (port <= 0 || port > 65535 || key.size() != kProbeKeyBytes) {
    return absl::InvalidArgumentError("the worker has no clock probe port");
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(absl::StrCat("clock probes: cannot resolve ",
                                               host, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("clock probes: cannot reach ",
                                               host, ":", port, ": ", why));
  }
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  return std::unique_ptr<UdpProber>(new UdpProber(fd, key));
}

UdpProber::~UdpProber() { close(fd_); }

int64_t UdpProber::Send() {
  char request[kProbePacketBytes];
  std::memcpy(request, kProbeRequestMagic, 8);
  std::memcpy(request + 8, key_.data(), kProbeKeyBytes);
  const int64_t sent = MonotonicNs();
  PutI64(request + 24, sent);
  PutI64(request + 32, 0);
  if (send(fd_, request, sizeof request, MSG_DONTWAIT) !=
      static_cast<ssize_t>(sizeof request)) {
    return 0;
  }
  return sent;
}

std::optional<UdpProber::Times> UdpProber::Receive(int64_t sent,
                                                   bool profiler_clock) {
  const ClockSkew& skew = TestClockSkew();
  auto local = [&](int64_t monotonic) {
    return profiler_clock ? skew.Apply(monotonic) : monotonic;
  };
  char reply[kProbePacketBytes + 1];
  char control[256];
  while (true) {
    iovec iov{reply, sizeof reply};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd_, &msg, MSG_DONTWAIT);
    if (n < 0) return std::nullopt;  // nothing more has arrived
    const int64_t woke = MonotonicNs();
    // A late answer to an earlier probe is not this one's.
    if (n != static_cast<ssize_t>(kProbePacketBytes) ||
        std::memcmp(reply, kProbeReplyMagic, 8) != 0 ||
        GetI64(reply + 8) != sent) {
      continue;
    }
    Times t;
    t.t1 = local(sent);
    t.t2 = GetI64(reply + 16);
    t.t3 = GetI64(reply + 24);
    t.t4 = local(ReceiveMonotonicNs(msg, woke));
    return t;
  }
}

std::optional<UdpProber::Times> UdpProber::ProbeTimes(int timeout_ms,
                                                      bool profiler_clock) {
  const int64_t sent = Send();
  if (sent == 0) return std::nullopt;
  const int64_t give_up = sent + int64_t{timeout_ms} * 1'000'000;
  while (true) {
    const int64_t left_ms = (give_up - MonotonicNs()) / 1'000'000;
    if (left_ms < 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left_ms) + 1) <= 0) continue;
    if (auto t = Receive(sent, profiler_clock)) return t;
  }
}

std::optional<ClockEstimate> UdpProber::Estimate(const Times& t) {
  const base::ProbeTimes times{t.t1, t.t2, t.t3, t.t4};
  if (base::CheckProbe(times) != base::ProbeFault::kNone) {
    discarded_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  return EstimateOf(base::SamplePeerLocal(times));
}

std::optional<ClockEstimate> UdpProber::ProbeOnce(int timeout_ms) {
  const std::optional<Times> t = ProbeTimes(timeout_ms, false);
  if (!t) return std::nullopt;
  return Estimate(*t);
}

absl::StatusOr<ClockEstimate> UdpProber::Probe(int probes) {
  std::optional<ClockEstimate> best;
  for (int i = 0; i < std::max(probes, 1); ++i) {
    auto e = ProbeOnce();
    if (e && (!best || e->uncertainty_ns < best->uncertainty_ns)) best = e;
  }
  if (!best) {
    return absl::UnavailableError(
        "no clock probe was answered with timestamps that can be trusted");
  }
  return *best;
}

ClockEstimate EstimateOf(const base::ClockSample& s) {
  ClockEstimate e;
  e.local_ns = s.local_ns;
  e.offset_ns = s.offset_ns;
  e.uncertainty_ns = std::max(s.half_width_ns, base::kClockCompareFloorNs);
  e.round_trip_ns = s.round_trip_ns;
  return e;
}

std::vector<ClockEstimate> FitClock(const std::vector<ClockEstimate>& probes) {
  if (probes.empty()) return {};
  std::vector<base::ClockSample> samples;
  int64_t min_rtt = probes.front().round_trip_ns;
  for (const ClockEstimate& p : probes) {
    samples.push_back(
        {p.local_ns, p.offset_ns, p.uncertainty_ns, p.round_trip_ns});
    min_rtt = std::min(min_rtt, p.round_trip_ns);
  }
  const base::ClockFit fit(std::move(samples));
  // The fit at up to kFitPoints probe times, first and last included: a
  // reader of the file interpolates between them and bounds the drift from
  // them, so points in between keep its uncertainty tight. Delayed probes
  // are left out (the fit is widest at them).
  constexpr size_t kFitPoints = 64;
  const std::vector<base::ClockSample>& kept = fit.samples();
  int64_t narrowest = kept.front().half_width_ns;
  for (const base::ClockSample& k : kept) {
    narrowest = std::min(narrowest, k.half_width_ns);
  }
  const int64_t keep_below = 2 * narrowest + 10'000;
  std::vector<int64_t> candidates;
  for (const base::ClockSample& k : kept) {
    if (k.half_width_ns <= keep_below) candidates.push_back(k.local_ns);
  }
  const size_t n = candidates.size();
  const size_t step =
      std::max<size_t>(1, (n + kFitPoints - 3) / (kFitPoints - 2));
  std::vector<int64_t> at = {kept.front().local_ns};
  for (size_t i = 0; i < n; i += step) {
    if (candidates[i] > at.back()) at.push_back(candidates[i]);
  }
  if (at.back() != kept.back().local_ns) at.push_back(kept.back().local_ns);
  std::vector<ClockEstimate> out;
  for (const int64_t local : at) {
    const base::ClockInterval i = fit.At(local);
    ClockEstimate e;
    e.local_ns = local;
    e.offset_ns = i.offset_ns;
    e.uncertainty_ns = i.uncertainty_ns;
    e.round_trip_ns = min_rtt;
    out.push_back(e);
  }
  return out;
}

}  // namespace podscope::profiler::internal
