#include "src/server/probe_responder.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "podscope/profiler/clock.h"
#include "src/clock_probe_wire.h"

namespace podscope::profiler::internal {
namespace {

// A host as the gRPC server takes it, without brackets.
std::string Unbracket(std::string host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") host = "127.0.0.1";
  return host;
}

bool SameKey(const char* a, const std::string& b) {
  unsigned diff = 0;
  for (size_t i = 0; i < kProbeKeyBytes; ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProbeResponder>> ProbeResponder::Start(
    const std::string& host_in) {
  const std::string host = Unbracket(host_in);
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
  if (host.find(':') != std::string::npos) {
    family = AF_INET6;
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = AF_INET6;
    if (inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("clock probes: '", host, "' is not an address"));
    }
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
    a4->sin_family = AF_INET;
    if (inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("clock probes: '", host, "' is not an address"));
    }
    len = sizeof *a4;
  }
  const int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("clock probes: socket: ", std::strerror(errno)));
  }
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("clock probes: cannot bind ", host, ": ", why));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  const int port =
      family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  std::string key(kProbeKeyBytes, '\0');
  if (getrandom(key.data(), key.size(), 0) !=
      static_cast<ssize_t>(key.size())) {
    close(fd);
    return absl::UnavailableError("clock probes: no random bytes for a key");
  }
  return std::unique_ptr<ProbeResponder>(
      new ProbeResponder(fd, port, std::move(key)));
}

ProbeResponder::ProbeResponder(int fd, int port, std::string key)
    : fd_(fd), port_(port), key_(std::move(key)) {
  thread_ = std::thread([this] { Run(); });
}

ProbeResponder::~ProbeResponder() {
  stop_ = true;
  thread_.join();
  close(fd_);
}

void ProbeResponder::Run() {
  char packet[kProbePacketBytes + 1];
  char control[256];
  while (!stop_.load(std::memory_order_relaxed)) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    sockaddr_storage from{};
    iovec iov{packet, sizeof packet};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd_, &msg, MSG_DONTWAIT);
    const int64_t woke = MonotonicNs();
    if (n != static_cast<ssize_t>(kProbePacketBytes) ||
        std::memcmp(packet, kProbeRequestMagic, 8) != 0 ||
        !SameKey(packet + 8, key_)) {
      continue;
    }
    const ClockSkew& skew = TestClockSkew();
    const int64_t received = skew.Apply(ReceiveMonotonicNs(msg, woke));
    char reply[kProbePacketBytes];
    std::memcpy(reply, kProbeReplyMagic, 8);
    std::memcpy(reply + 8, packet + 24, 8);  // the client's send time
    PutI64(reply + 16, received);
    PutI64(reply + 32, 0);
    PutI64(reply + 24, skew.Apply(MonotonicNs()));
    (void)sendto(fd_, reply, sizeof reply, 0,
                 reinterpret_cast<sockaddr*>(&from), msg.msg_namelen);
  }
}

}  // namespace podscope::profiler::internal
