// Abseil's mutex deadlock detection, off where Podscope talks gRPC
// (mutex_checks.h).
#include "podscope/base/mutex_checks.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/synchronization/mutex.h"

namespace podscope::base {

void TurnOffMutexDeadlockDetection() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* keep = std::getenv("PODSCOPE_ABSL_DEADLOCK_DETECTION");
    if (keep != nullptr && std::strcmp(keep, "1") == 0) return;
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  });
}

}  // namespace podscope::base
