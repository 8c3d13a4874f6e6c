#include "common/capture_costs.h"

#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <vector>

#include "common/cpu_accounting.h"
#include "common/paired_stats.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"

namespace podscope::bench {
namespace {

__attribute__((noinline)) void Scopes(int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    PODSCOPE_TRACE("overhead calibration");
    benchmark::ClobberMemory();
  }
}

void EmptyHandler(int, siginfo_t*, void*) {}

}  // namespace

UnitCosts MeasureUnitCosts(const std::string& dir) {
  constexpr int64_t kScopes = 2'000'000;
  std::vector<double> per_scope;
  for (int round = 0; round < 5; ++round) {
    double t0 = static_cast<double>(ThreadCpuNs());
    Scopes(kScopes);
    const double off = static_cast<double>(ThreadCpuNs()) - t0;
    if (!profiler::StartTrace(dir).ok()) break;
    t0 = static_cast<double>(ThreadCpuNs());
    Scopes(kScopes);
    const double on = static_cast<double>(ThreadCpuNs()) - t0;
    (void)profiler::StopTrace();
    per_scope.push_back((on - off) / kScopes);
  }
  UnitCosts costs;
  costs.scope_ns = per_scope.empty() ? 0 : Quantile(per_scope, 0.5);
  struct sigaction action {
  }, previous{};
  action.sa_sigaction = EmptyHandler;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGUSR2, &action, &previous) == 0) {
    constexpr int kSignals = 100'000;
    const pid_t pid = getpid();
    const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
    const double t0 = static_cast<double>(ThreadCpuNs());
    for (int i = 0; i < kSignals; ++i) syscall(SYS_tgkill, pid, tid, SIGUSR2);
    costs.signal_ns = (static_cast<double>(ThreadCpuNs()) - t0) / kSignals;
    sigaction(SIGUSR2, &previous, nullptr);
  }
  return costs;
}

}  // namespace podscope::bench
