#include "podscope/runtime/ir/scope.h"

#include <vector>

namespace podscope::runtime {
namespace {

struct ScopeStack {
  // paths[i] is the full path with i+1 names; kept so CurrentScope() is a
  // lookup, since every recorded op asks for it.
  std::vector<std::string> paths;
};

ScopeStack& Stack() {
  thread_local ScopeStack stack;
  return stack;
}

}  // namespace

ScopedName::ScopedName(std::string_view name) {
  ScopeStack& stack = Stack();
  if (stack.paths.empty()) {
    stack.paths.emplace_back(name);
  } else {
    std::string path = stack.paths.back();
    path += '/';
    path += name;
    stack.paths.push_back(std::move(path));
  }
}

ScopedName::~ScopedName() { Stack().paths.pop_back(); }

const std::string& CurrentScope() {
  static const std::string* const kEmpty = new std::string();
  const ScopeStack& stack = Stack();
  return stack.paths.empty() ? *kEmpty : stack.paths.back();
}

}  // namespace podscope::runtime
