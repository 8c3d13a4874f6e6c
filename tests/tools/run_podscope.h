// Runs the real `podscope` binary as a child process and captures what it
// prints and how it exits, as a user's shell would see it.
#ifndef PODSCOPE_TESTS_TOOLS_RUN_PODSCOPE_H_
#define PODSCOPE_TESTS_TOOLS_RUN_PODSCOPE_H_

#include <string>
#include <vector>

namespace podscope::tools::testing {

struct RunResult {
  int exit_code = -1;  // -1 when the child did not exit normally
  std::string out;
  std::string err;
};

// Runs podscope with `args` (no shell involved), stdin from /dev/null.
RunResult RunPodscope(const std::vector<std::string>& args);

// The same, with stderr on a pseudo-terminal so that the child sees a TTY;
// `err` then holds what the terminal received.
RunResult RunPodscopeWithTtyStderr(const std::vector<std::string>& args);

}  // namespace podscope::tools::testing

#endif  // PODSCOPE_TESTS_TOOLS_RUN_PODSCOPE_H_
