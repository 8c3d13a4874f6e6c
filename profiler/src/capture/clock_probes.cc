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

std::optional<UdpProber::Times> UdpProber::ProbeTimes(int timeout_ms,
                                                      bool profiler_clock) {
  const ClockSkew& skew = TestClockSkew();
  auto local = [&](int64_t monotonic) {
    return profiler_clock ? skew.Apply(monotonic) : monotonic;
  };
  char request[kProbePacketBytes];
  std::memcpy(request, kProbeRequestMagic, 8);
  std::memcpy(request + 8, key_.data(), kProbeKeyBytes);
  const int64_t sent = MonotonicNs();
  PutI64(request + 24, sent);
  PutI64(request + 32, 0);
  if (send(fd_, request, sizeof request, 0) !=
      static_cast<ssize_t>(sizeof request)) {
    return std::nullopt;
  }
  const int64_t give_up = sent + int64_t{timeout_ms} * 1'000'000;
  char reply[kProbePacketBytes + 1];
  char control[256];
  while (true) {
    const int64_t left_ms = (give_up - MonotonicNs()) / 1'000'000;
    if (left_ms < 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left_ms) + 1) <= 0) continue;
    iovec iov{reply, sizeof reply};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd_, &msg, MSG_DONTWAIT);
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

std::optional<ClockEstimate> UdpProber::ProbeOnce(int timeout_ms) {
  const std::optional<Times> t = ProbeTimes(timeout_ms, false);
  if (!t) return std::nullopt;
  ClockEstimate e;
  e.round_trip_ns = std::max<int64_t>((t->t4 - t->t1) - (t->t3 - t->t2), 0);
  e.local_ns = t->t2 + (t->t3 - t->t2) / 2;
  // reference = local + offset, from the midpoints of both sides.
  e.offset_ns = (t->t1 + (t->t4 - t->t1) / 2) - e.local_ns;
  e.uncertainty_ns = std::max<int64_t>(e.round_trip_ns / 2, 1);
  return e;
}

absl::StatusOr<ClockEstimate> UdpProber::Probe(int probes) {
  std::optional<ClockEstimate> best;
  for (int i = 0; i < std::max(probes, 1); ++i) {
    auto e = ProbeOnce();
    if (e && (!best || e->round_trip_ns < best->round_trip_ns)) best = e;
  }
  if (!best) {
    return absl::UnavailableError("no clock probe was answered");
  }
  return *best;
}

std::vector<ClockEstimate> FitClock(const std::vector<ClockEstimate>& probes) {
  if (probes.size() <= 1) return probes;
  int64_t min_rtt = std::numeric_limits<int64_t>::max();
  for (const ClockEstimate& p : probes)
    min_rtt = std::min(min_rtt, p.round_trip_ns);
  // Probes delayed by the scheduler or the network say little; keep those
  // near the fastest.
  const int64_t keep_below = min_rtt + std::max<int64_t>(min_rtt / 2, 10'000);
  std::vector<const ClockEstimate*> kept;
  for (const ClockEstimate& p : probes) {
    if (p.round_trip_ns <= keep_below) kept.push_back(&p);
  }
  std::sort(kept.begin(), kept.end(),
            [](auto* a, auto* b) { return a->local_ns < b->local_ns; });
  const int64_t x0 = kept.front()->local_ns;
  const int64_t y0 = kept.front()->offset_ns;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ClockEstimate* p : kept) {
    const double x = static_cast<double>(p->local_ns - x0);
    const double y = static_cast<double>(p->offset_ns - y0);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = static_cast<double>(kept.size());
  const double det = n * sxx - sx * sx;
  double slope = 0;
  double intercept = sy / n;
  if (kept.size() >= 2 && det > 0) {
    slope = (n * sxy - sx * sy) / det;
    intercept = (sy - slope * sx) / n;
  }
  double worst = 0;
  for (const ClockEstimate* p : kept) {
    const double x = static_cast<double>(p->local_ns - x0);
    const double y = static_cast<double>(p->offset_ns - y0);
    worst = std::max(worst, std::abs(y - (intercept + slope * x)));
  }
  const int64_t uncertainty = std::max<int64_t>(
      min_rtt / 2 + static_cast<int64_t>(std::ceil(worst)), 1);
  auto at = [&](int64_t local) {
    ClockEstimate e;
    e.local_ns = local;
    e.offset_ns =
        y0 + static_cast<int64_t>(std::llround(
                 intercept + slope * static_cast<double>(local - x0)));
    e.uncertainty_ns = uncertainty;
    e.round_trip_ns = min_rtt;
    return e;
  };
  const int64_t first =
      std::min_element(probes.begin(), probes.end(), [](auto& a, auto& b) {
        return a.local_ns < b.local_ns;
      })->local_ns;
  const int64_t last =
      std::max_element(probes.begin(), probes.end(), [](auto& a, auto& b) {
        return a.local_ns < b.local_ns;
      })->local_ns;
  if (last == first) return {at(first)};
  return {at(first), at(last)};
}

}  // namespace podscope::profiler::internal
