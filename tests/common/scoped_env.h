// Sets (or unsets, with nullopt) an environment variable for a scope, and
// restores what it was (or its absence) at the end.
#ifndef PODSCOPE_TESTS_COMMON_SCOPED_ENV_H_
#define PODSCOPE_TESTS_COMMON_SCOPED_ENV_H_

#include <stdlib.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace podscope::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace podscope::testing

#endif  // PODSCOPE_TESTS_COMMON_SCOPED_ENV_H_
