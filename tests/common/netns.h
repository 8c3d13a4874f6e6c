// Tests that put hosts in network namespaces: whether namespaces can be
// made here (tests/common/netns_check.sh makes one, with a veth pair and a
// bridge, and removes it; its path is PODSCOPE_NETNS_CHECK), and a skip
// that says why, or a failure when PODSCOPE_REQUIRE_NETNS=1 (as in CI).
#ifndef PODSCOPE_TESTS_COMMON_NETNS_H_
#define PODSCOPE_TESTS_COMMON_NETNS_H_

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace podscope::testing {

// "" when network namespaces can be made here, else why not.
inline std::string NetworkNamespacesUnavailable() {
  std::FILE* check = popen("sh '" PODSCOPE_NETNS_CHECK "' 2>&1", "r");
  if (check == nullptr) return "cannot run " PODSCOPE_NETNS_CHECK;
  std::string why;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), check) != nullptr) why += buf;
  const int status = pclose(check);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) {
    why.pop_back();
  }
  return why.empty() ? "the check " PODSCOPE_NETNS_CHECK " failed" : why;
}

inline bool NetworkNamespacesRequired() {
  const char* v = std::getenv("PODSCOPE_REQUIRE_NETNS");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace podscope::testing

// Skips the running test, saying why, when network namespaces cannot be
// made here; fails it instead with PODSCOPE_REQUIRE_NETNS=1.
#define PODSCOPE_SKIP_WITHOUT_NETWORK_NAMESPACES()                           \
  do {                                                                       \
    const std::string why_no_netns =                                         \
        ::podscope::testing::NetworkNamespacesUnavailable();                 \
    if (!why_no_netns.empty()) {                                             \
      if (::podscope::testing::NetworkNamespacesRequired()) {                \
        FAIL() << "network namespaces cannot be made here: " << why_no_netns \
               << " (PODSCOPE_REQUIRE_NETNS=1)";                             \
      }                                                                      \
      GTEST_SKIP() << "network namespaces cannot be made here: "             \
                   << why_no_netns                                           \
                   << "; set PODSCOPE_REQUIRE_NETNS=1 to make this a "       \
                      "failure";                                             \
    }                                                                        \
  } while (0)

#endif  // PODSCOPE_TESTS_COMMON_NETNS_H_
