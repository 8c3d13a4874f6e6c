// Process-wide interning of the names the hot path records: each call site
// interns its literal once, dynamic names go through a per-thread cache, so
// events carry 32-bit ids and never copy strings.
#ifndef PODSCOPE_PROFILER_SRC_STRING_REGISTRY_H_
#define PODSCOPE_PROFILER_SRC_STRING_REGISTRY_H_

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

namespace podscope::profiler::internal {

class StringRegistry {
 public:
  static StringRegistry& Get();

  // The id of `s` (ids start at 1; 0 is the empty string).
  uint32_t Intern(std::string_view s);
  // The string with id `id`; stable for the life of the process.
  std::string_view Lookup(uint32_t id) const;
  uint32_t size() const;

 private:
  mutable std::mutex mutex_;
  // A deque keeps references stable as it grows.
  std::deque<std::string> strings_{""};
  absl::flat_hash_map<absl::string_view, uint32_t> ids_;  // views into strings_
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_STRING_REGISTRY_H_
