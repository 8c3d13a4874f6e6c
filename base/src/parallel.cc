#include "podscope/base/parallel.h"

namespace podscope::base {

int HardwareThreads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace podscope::base
