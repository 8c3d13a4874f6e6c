#ifndef PODSCOPE_RUNTIME_IR_SCOPE_H_
#define PODSCOPE_RUNTIME_IR_SCOPE_H_

#include <string>
#include <string_view>

namespace podscope::runtime {

// Names the ops recorded by this thread while it lives, so that device work
// can be traced as "<scope>/<op>". Scopes nest: "forward/conv1".
class ScopedName {
 public:
  explicit ScopedName(std::string_view name);
  ~ScopedName();
  ScopedName(const ScopedName&) = delete;
  ScopedName& operator=(const ScopedName&) = delete;
};

// The calling thread's current scope path, "" outside any ScopedName.
const std::string& CurrentScope();

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_IR_SCOPE_H_
