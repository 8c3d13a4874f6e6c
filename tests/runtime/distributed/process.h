// A process for the distributed tests: stdout and stderr together on one
// pipe, see tests/common/test_process.h.
#ifndef PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_
#define PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_

#include <string>
#include <vector>

#include "../../common/test_process.h"

namespace podscope::runtime::testing {

class Process : public podscope::testing::TestProcess {
 public:
  Process(const std::vector<std::string>& argv,
          const std::vector<std::string>& env = {})
      : TestProcess(argv, env, {.merge_stderr = true}) {}
};

}  // namespace podscope::runtime::testing

#endif  // PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_
