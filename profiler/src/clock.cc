#include "podscope/profiler/clock.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace podscope::profiler {
namespace internal {
bool g_use_tsc = [] {
  // PODSCOPE_CLOCK=monotonic forces the clock_gettime fallback (for
  // machines whose TSC misbehaves despite CPUID).
  const char* forced = std::getenv("PODSCOPE_CLOCK");
  if (forced != nullptr && std::strcmp(forced, "monotonic") == 0) return false;
  return CpuHasInvariantTsc();
}();
}  // namespace internal

namespace {

// One (ticks, ns) pair, taken with the ticks read on both sides of the
// clock_gettime call so the pair is as tight as the machine allows.
struct Pair {
  uint64_t ticks;
  int64_t ns;
};

Pair TightPair() {
  Pair best{0, 0};
  uint64_t best_width = ~uint64_t{0};
  for (int i = 0; i < 16; ++i) {
    const uint64_t a = Ticks();
    const int64_t ns = MonotonicNs();
    const uint64_t b = Ticks();
    if (b - a < best_width) {
      best_width = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}

}  // namespace

const ClockSkew& TestClockSkew() {
  static const ClockSkew skew = [] {
    ClockSkew s;
    if (const char* v = std::getenv("PODSCOPE_TEST_CLOCK_OFFSET_NS")) {
      s.offset_ns = std::strtoll(v, nullptr, 10);
    }
    if (const char* v = std::getenv("PODSCOPE_TEST_CLOCK_DRIFT_PPM")) {
      s.drift_ppm = std::strtod(v, nullptr);
    }
    s.anchor_ns = MonotonicNs();
    return s;
  }();
  return skew;
}

const ProfilerClock& ProcessClock() {
  class Process final : public ProfilerClock {
   public:
    ClockSkew skew() const override { return TestClockSkew(); }
  };
  static const Process* clock = new Process();
  return *clock;
}

bool CpuHasInvariantTsc() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid(0x80000000, &eax, &ebx, &ecx, &edx) == 0 ||
      eax < 0x80000007) {
    return false;
  }
  __get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

TickCalibration CalibrateTicks(int sample_ms) {
  TickCalibration c;
  c.tsc = internal::g_use_tsc;
  const Pair start = TightPair();
  c.tick_base = start.ticks;
  c.ns_base = start.ns;
  if (!c.tsc) return c;  // ticks are nanoseconds already
  // Slept, not spun: the rate comes from the two tight pairs alone, and a
  // machine running many processes (a capture starting on every one of
  // them) should not spend a core per process waiting.
  const int64_t until = start.ns + int64_t{sample_ms} * 1'000'000;
  for (int64_t now = MonotonicNs(); now < until; now = MonotonicNs()) {
    const int64_t left = until - now;
    timespec ts{static_cast<time_t>(left / 1'000'000'000),
                static_cast<long>(left % 1'000'000'000)};
    nanosleep(&ts, nullptr);
  }
  const Pair end = TightPair();
  c.ns_per_tick = static_cast<double>(end.ns - start.ns) /
                  static_cast<double>(end.ticks - start.ticks);
  return c;
}

TickCalibration ProcessTickCalibration() {
  static const TickCalibration first = CalibrateTicks(10);
  return RefineCalibration(first);
}

TickCalibration RefineCalibration(const TickCalibration& start) {
  if (!start.tsc) return start;
  const Pair end = TightPair();
  TickCalibration c = start;
  if (end.ticks > start.tick_base + 1'000'000) {
    c.ns_per_tick = static_cast<double>(end.ns - start.ns_base) /
                    static_cast<double>(end.ticks - start.tick_base);
  }
  return c;
}

}  // namespace podscope::profiler
