// A process for the distributed tests: stdout and stderr together on one
// pipe, see tests/common/test_process.h.
#ifndef PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_
#define PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_

#include <unistd.h>

#include <filesystem>
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

// A fresh empty folder <tmp>/<prefix>-<pid>/<name>.
inline std::string FreshDir(const std::string& prefix,
                            const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (prefix + "-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace podscope::runtime::testing

#endif  // PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_
