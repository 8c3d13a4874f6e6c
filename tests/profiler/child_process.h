// A worker process for the profiler's tests: stdin and stdout on pipes
// (stderr stays on the test's), see tests/common/test_process.h.
#ifndef PODSCOPE_TESTS_PROFILER_CHILD_PROCESS_H_
#define PODSCOPE_TESTS_PROFILER_CHILD_PROCESS_H_

#include <string>
#include <vector>

#include "../common/test_process.h"

namespace podscope::profiler::testing {

class ChildProcess : public podscope::testing::TestProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv,
               const std::vector<std::string>& env = {})
      : TestProcess(argv, env, {.pipe_stdin = true}) {}
};

}  // namespace podscope::profiler::testing

#endif  // PODSCOPE_TESTS_PROFILER_CHILD_PROCESS_H_
