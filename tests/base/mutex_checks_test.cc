// Abseil's mutex deadlock detection turned off for the process
// (mutex_checks.h): a lock-order inversion, which a debug abseil aborts on,
// no longer does, unless PODSCOPE_ABSL_DEADLOCK_DETECTION=1 keeps it.
#include "podscope/base/mutex_checks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/synchronization/mutex.h"

namespace podscope::base {
namespace {

// Takes two mutexes in one order and then in the other.
void LockInBothOrders() {
  absl::Mutex a, b;
  {
    absl::MutexLock la(&a);
    absl::MutexLock lb(&b);
  }
  {
    absl::MutexLock lb(&b);
    absl::MutexLock la(&a);
  }
}

// Runs `body` in a child process; its wait status.
template <typename F>
int InChild(F body) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

bool AbseilDetectsDeadlocks() {
  const int status = InChild([] { LockInBothOrders(); });
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(MutexChecks, ALockOrderInversionNoLongerAborts) {
  if (!AbseilDetectsDeadlocks()) {
    GTEST_SKIP() << "this abseil was built without deadlock detection";
  }
  const int status = InChild([] {
    unsetenv("PODSCOPE_ABSL_DEADLOCK_DETECTION");
    TurnOffMutexDeadlockDetection();
    LockInBothOrders();
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "wait status " << status;
}

TEST(MutexChecks, KeptWhenTheEnvironmentAsks) {
  if (!AbseilDetectsDeadlocks()) {
    GTEST_SKIP() << "this abseil was built without deadlock detection";
  }
  const int status = InChild([] {
    setenv("PODSCOPE_ABSL_DEADLOCK_DETECTION", "1", 1);
    TurnOffMutexDeadlockDetection();
    LockInBothOrders();
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
      << "wait status " << status;
}

}  // namespace
}  // namespace podscope::base
