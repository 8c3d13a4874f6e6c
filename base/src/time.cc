#include "podscope/base/time.h"

#include <cstdlib>

#include "absl/strings/numbers.h"

namespace podscope::base {

absl::Duration EnvMs(const char* name, absl::Duration fallback) {
  const char* v = std::getenv(name);
  int64_t ms = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &ms) || ms <= 0) return fallback;
  return absl::Milliseconds(ms);
}

}  // namespace podscope::base
