// Network addresses as the command line, the environment and peers write
// them.
//
// Contract:
// - SplitHostPort("host:port") and SplitHostPort("[v6]:port") give the host
//   (without brackets) and a port in 1..65535; anything else is
//   InvalidArgument naming `what` and the text.
// - JoinHostPort is its inverse: a host holding ':' (IPv6) is bracketed.
// - IsLoopbackHost: "localhost", 127.0.0.0/8 written as "127.…", "::1" and
//   "[::1]". Names are not resolved.
// - HostName: this machine's name (gethostname), or "unknown-host".
#ifndef PODSCOPE_BASE_NET_H_
#define PODSCOPE_BASE_NET_H_

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace podscope::base {

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    std::string_view address, std::string_view what);
std::string JoinHostPort(std::string_view host, int port);
bool IsLoopbackHost(std::string_view host);
std::string HostName();

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_NET_H_
