#include "src/string_registry.h"

namespace podscope::profiler::internal {

StringRegistry& StringRegistry::Get() {
  // Never destroyed: threads may record while the process exits.
  static auto* registry = new StringRegistry();
  return *registry;
}

uint32_t StringRegistry::Intern(std::string_view s) {
  if (s.empty()) return 0;
  const absl::string_view key(s.data(), s.size());
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(strings_.size());
  const std::string& stored = strings_.emplace_back(s);
  ids_.emplace(absl::string_view(stored.data(), stored.size()), id);
  return id;
}

std::string_view StringRegistry::Lookup(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return id < strings_.size() ? std::string_view(strings_[id]) : "";
}

uint32_t StringRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<uint32_t>(strings_.size());
}

}  // namespace podscope::profiler::internal
