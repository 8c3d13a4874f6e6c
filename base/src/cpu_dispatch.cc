#include "podscope/base/cpu_dispatch.h"

#include <cstdlib>

namespace podscope::base {

bool UseX86V3() {
  static const bool use = [] {
    if (std::getenv("PODSCOPE_CPU_BASELINE") != nullptr) return false;
#if PODSCOPE_HAVE_X86V3
    __builtin_cpu_init();
    return __builtin_cpu_supports("x86-64-v3") != 0;
#else
    return false;
#endif
  }();
  return use;
}

}  // namespace podscope::base
