#include "podscope/base/net.h"

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace podscope::base {

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    std::string_view address_view, std::string_view what_view) {
  // absl::string_view, which abseil's string functions take.
  const absl::string_view address(address_view.data(), address_view.size());
  const absl::string_view what(what_view.data(), what_view.size());
  std::string host;
  absl::string_view port_text;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos || close + 1 >= address.size() ||
        address[close + 1] != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": '", address, "' is not [ipv6]:port"));
    }
    host = std::string(address.substr(1, close - 1));
    port_text = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == absl::string_view::npos || colon == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": '", address, "' is not host:port"));
    }
    host = std::string(address.substr(0, colon));
    port_text = address.substr(colon + 1);
  }
  int port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": '", address, "' has no valid port (1..65535)"));
  }
  return std::make_pair(host, port);
}

std::string JoinHostPort(std::string_view host, int port) {
  const absl::string_view h(host.data(), host.size());
  if (h.find(':') != absl::string_view::npos && !h.empty() &&
      h.front() != '[') {
    return absl::StrCat("[", h, "]:", port);
  }
  return absl::StrCat(h, ":", port);
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" ||
         host.rfind("127.", 0) == 0;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "unknown-host";
  }
  return name;
}

}  // namespace podscope::base
