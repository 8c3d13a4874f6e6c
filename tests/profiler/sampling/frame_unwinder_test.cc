#include "src/sampling/frame_unwinder.h"

#define UNW_LOCAL_ONLY
#include <alloca.h>
#include <dlfcn.h>
#include <libunwind.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/base/sanitizers.h"
#include "src/sampling/stack_sampler.h"
#include "src/sampling/symbolizer.h"

namespace podscope::profiler::sampling {
namespace {

constexpr uint32_t kDepth = 64;

int64_t ThreadCpuNs() {
  struct timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// Frames of the shapes compilers emit: no frame pointer, a frame pointer
// forced by alloca(), a stack realigned for an over-aligned local, and a
// recursion, so a sample lands in each kind of prologue, body and epilogue.
__attribute__((noinline)) uint64_t Mix(uint64_t x, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    asm volatile("" : "+r"(x));
  }
  return x;
}

__attribute__((noinline)) uint64_t WithAlloca(uint64_t x, int n) {
  auto* scratch = static_cast<volatile uint64_t*>(alloca(8 * (n % 7 + 1)));
  scratch[0] = x;
  return Mix(scratch[0], 2000) + 1;
}

__attribute__((noinline)) uint64_t WithAlignedLocal(uint64_t x, int n) {
  alignas(64) volatile uint64_t block[8];
  block[n % 8] = x;
  return WithAlloca(block[n % 8], n) ^ Mix(x, 500);
}

__attribute__((noinline)) uint64_t Recurse(uint64_t x, int depth) {
  if (depth == 0) return WithAlignedLocal(x, static_cast<int>(x & 15));
  const uint64_t y = Recurse(x + 1, depth - 1);
  asm volatile("" : "+r"(x));
  return y + x;
}

__attribute__((noinline)) uint64_t Burn(int64_t cpu_ns) {
  const int64_t end = ThreadCpuNs() + cpu_ns;
  uint64_t x = 1;
  int round = 0;
  while (ThreadCpuNs() < end) x += Recurse(x, 3 + (round++ % 5));
  return x;
}

#if !PODSCOPE_TSAN
// Both unwinders on the same interrupted context, from a signal handler.
struct Pair {
  uint32_t fast_depth = 0;
  uint32_t slow_depth = 0;
  uint64_t fast[kDepth];
  uint64_t slow[kDepth];
};
constexpr int kMaxPairs = 4096;
Pair g_pairs[kMaxPairs];
std::atomic<int> g_taken{0};

void CompareHandler(int, siginfo_t*, void* ucontext) {
  const int i = g_taken.load(std::memory_order_relaxed);
  if (i >= kMaxPairs) return;
  Pair& p = g_pairs[i];
  p.fast_depth = UnwindFast(RegistersFromUcontext(ucontext), p.fast, kDepth);
  unw_cursor_t cursor;
  p.slow_depth = 0;
  if (unw_init_local2(&cursor, static_cast<unw_context_t*>(ucontext),
                      UNW_INIT_SIGNAL_FRAME) == 0) {
    do {
      unw_word_t ip = 0;
      if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
      p.slow[p.slow_depth++] = ip;
    } while (p.slow_depth < kDepth && unw_step(&cursor) > 0);
  }
  g_taken.store(i + 1, std::memory_order_relaxed);
}
#endif  // !PODSCOPE_TSAN

#if defined(__x86_64__)

// Under ThreadSanitizer a signal's handler runs late, with a copy of a
// context whose stack has moved on: the tests that walk from a signal are
// left out there.
#if !PODSCOPE_TSAN
TEST(FrameUnwinder, GivesLibunwindsStacksForSampledFrames) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> go{false};
  std::atomic<uint64_t> sink{0};
  std::thread worker([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    while (!go) std::this_thread::yield();
    // Until enough samples are taken: a signal that arrives while the
    // handler still runs is merged with it, so a slow walk (a sanitizer's
    // build, a loaded machine) takes fewer samples per second of CPU.
    uint64_t x = 0;
    for (int slice = 0; slice < 150 && g_taken.load() < 400; ++slice) {
      x += Burn(100'000'000);
    }
    sink = x;
  });
  while (tid == 0) std::this_thread::yield();
  InstallUnwindMap(UnwindMap::Build());  // after the worker's stack exists

  struct sigaction action {};
  action.sa_sigaction = CompareHandler;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGPROF, &action, &previous), 0);
  struct sigevent event {};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = SIGPROF;
  event._sigev_un._tid = tid;
  clockid_t clock;
  ASSERT_EQ(pthread_getcpuclockid(worker.native_handle(), &clock), 0);
  timer_t timer;
  ASSERT_EQ(timer_create(clock, &event, &timer), 0);
  struct itimerspec spec {};
  spec.it_interval.tv_nsec = 1'003'009;  // ~997 Hz, as the sampler
  spec.it_value = spec.it_interval;
  ASSERT_EQ(timer_settime(timer, 0, &spec, nullptr), 0);
  go = true;
  worker.join();
  timer_delete(timer);
  sigaction(SIGPROF, &previous, nullptr);

  const int taken = g_taken.load();
  ASSERT_GE(taken, 200) << "too few samples to judge";
  int fast_ok = 0;
  int same = 0;
  int compared = 0;
  for (int i = 0; i < taken; ++i) {
    const Pair& p = g_pairs[i];
    if (p.fast_depth == 0) continue;
    ++fast_ok;
    if (p.slow_depth == 0) continue;
    ++compared;
    if (p.fast_depth == p.slow_depth &&
        std::memcmp(p.fast, p.slow, p.fast_depth * sizeof(uint64_t)) == 0) {
      ++same;
    } else if (compared - same <= 3) {
      std::string fast, slow;
      for (uint32_t k = 0; k < p.fast_depth; ++k) {
        fast += " " + std::to_string(p.fast[k]);
      }
      for (uint32_t k = 0; k < p.slow_depth; ++k) {
        slow += " " + std::to_string(p.slow[k]);
      }
      ADD_FAILURE() << "sample " << i << " differs:\n fast:" << fast
                    << "\n libunwind:" << slow;
    }
  }
  // Every frame of this program has call frame information: the cached
  // unwinder must vouch for (nearly) every stack, and give exactly what
  // libunwind gives.
  EXPECT_GE(fast_ok, taken * 95 / 100) << fast_ok << " of " << taken;
  EXPECT_EQ(same, compared);
  // The walk reaches the thread's first frame: deeper than the recursion.
  int deep = 0;
  for (int i = 0; i < taken; ++i) deep += g_pairs[i].fast_depth >= 7;
  EXPECT_GE(deep, fast_ok / 2);
  EXPECT_NE(sink.load(), 0u);
}

#endif  // !PODSCOPE_TSAN

// A stack of random words, between two pages that may not be read: the walk
// follows whatever the words say and must never read past its mapping.
TEST(FrameUnwinder, CorruptStacksEndTheWalkInsideTheirMapping) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* region =
      static_cast<uint8_t*>(mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(region, MAP_FAILED);
  ASSERT_EQ(mprotect(region, page, PROT_NONE), 0);
  ASSERT_EQ(mprotect(region + 3 * page, page, PROT_NONE), 0);
  uint8_t* stack = region + page;
  const size_t size = 2 * page;
  InstallUnwindMap(UnwindMap::Build());

  // Code addresses that have unwind rules, so walks go on for a while.
  const uint64_t code[] = {reinterpret_cast<uint64_t>(&Mix) + 9,
                           reinterpret_cast<uint64_t>(&WithAlloca) + 20,
                           reinterpret_cast<uint64_t>(&WithAlignedLocal) + 30,
                           reinterpret_cast<uint64_t>(&Recurse) + 17,
                           reinterpret_cast<uint64_t>(&Burn) + 25};
  std::mt19937_64 random(42);
  uint64_t longest = 0;
  uint64_t ips[kDepth];
  for (int round = 0; round < 20'000; ++round) {
    auto* words = reinterpret_cast<uint64_t*>(stack);
    for (size_t i = 0; i < size / 8; ++i) {
      const uint64_t r = random();
      switch (r % 4) {
        case 0:
          words[i] = code[(r >> 8) % 5];
          break;
        case 1:
          words[i] =
              reinterpret_cast<uint64_t>(stack) + (r >> 8) % (size + 64) - 32;
          break;
        default:
          words[i] = r;
          break;
      }
    }
    UnwindRegisters registers;
    for (uint64_t& v : registers.value) v = random();
    registers.known = (1u << 17) - 1;
    registers.value[16] = code[round % 5];
    registers.value[7] = reinterpret_cast<uint64_t>(stack) + random() % size;
    registers.value[6] =
        reinterpret_cast<uint64_t>(stack) + random() % (size + 64) - 32;
    // A walk that runs out of its depth succeeds; one that meets a word it
    // cannot follow declines. Short depths let some walks succeed.
    const uint32_t max_depth = 2 + round % 6;
    const uint32_t depth = UnwindFast(registers, ips, max_depth);
    ASSERT_LE(depth, max_depth);
    longest = std::max<uint64_t>(longest, depth);
  }
  EXPECT_GE(longest, 3u) << "no walk through the random stack went 3 frames";
  munmap(region, 4 * page);
}

TEST(FrameUnwinder, DeclinesWhatItCannotVouchFor) {
  InstallUnwindMap(UnwindMap::Build());
  alignas(16) uint64_t stack[64] = {};
  uint64_t ips[kDepth];
  UnwindRegisters registers;
  registers.known = (1u << 17) - 1;
  registers.value[7] = reinterpret_cast<uint64_t>(stack);
  // An address that is no code.
  registers.value[16] = 0x1000;
  EXPECT_EQ(UnwindFast(registers, ips, kDepth), 0u);
  // A stack pointer in no writable mapping.
  registers.value[16] = reinterpret_cast<uint64_t>(&Mix) + 4;
  registers.value[7] = reinterpret_cast<uint64_t>(&Mix);
  EXPECT_EQ(UnwindFast(registers, ips, kDepth), 0u);
  // Registers it was not given.
  registers.value[7] = reinterpret_cast<uint64_t>(stack);
  registers.known = 1u << 16;
  EXPECT_EQ(UnwindFast(registers, ips, kDepth), 0u);
  // No map at all.
  InstallUnwindMap(nullptr);
  registers.known = (1u << 17) - 1;
  EXPECT_EQ(UnwindFast(registers, ips, kDepth), 0u);
}

// Maps replaced while another thread walks: an old map is freed only once
// no walk can still read it (AddressSanitizer reports it otherwise).
TEST(FrameUnwinder, MapsReplacedDuringWalks) {
  InstallUnwindMap(UnwindMap::Build());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> walked{0};
  std::thread walker([&] {
    uint64_t ips[kDepth];
    while (!stop) {
      ucontext_t context;
      getcontext(&context);
      if (UnwindFast(RegistersFromUcontext(&context), ips, kDepth) > 0) {
        ++walked;
      }
    }
  });
  for (int i = 0; i < 200; ++i) InstallUnwindMap(UnwindMap::Build());
  stop = true;
  walker.join();
  EXPECT_GT(walked.load(), 0u);
}

// A library loaded after the map was built: the map is no longer current,
// and the next one lists the library's code.
TEST(FrameUnwinder, ALibraryLoadedLaterIsInTheNextMap) {
  InstallUnwindMap(UnwindMap::Build());
  ASSERT_TRUE(UnwindMapIsCurrent());
  // zlib: on every Debian system, and linked into nothing of this test.
  void* library = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) GTEST_SKIP() << "no libz.so.1: " << dlerror();
  void* function = dlsym(library, "zlibVersion");
  ASSERT_NE(function, nullptr);
  const auto address = reinterpret_cast<uintptr_t>(function);
  EXPECT_EQ(CurrentUnwindMap()->FindCode(address), nullptr);
  EXPECT_FALSE(UnwindMapIsCurrent());
  InstallUnwindMap(UnwindMap::Build());
  EXPECT_TRUE(UnwindMapIsCurrent());
  const UnwindMap::Code* code = CurrentUnwindMap()->FindCode(address);
  ASSERT_NE(code, nullptr);
  EXPECT_NE(CurrentUnwindMap()->object(code->object).count, 0u)
      << "zlib's .eh_frame_hdr search table was not found";
  dlclose(library);
}

#if !PODSCOPE_TSAN
// The sampler takes its stacks through the cached unwinder.
TEST(FrameUnwinder, TheSamplerUsesIt) {
  auto sampler = StackSampler::Create({});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  const SamplerCost before = StackSampler::Cost();
  // PODSCOPE_UNWIND_BURN_MS burns that much CPU time; by default the
  // thread burns until it has been sampled 150 times (the kernel's tick
  // caps the signals, and a loaded machine delivers fewer per second of
  // CPU), at most 10 s of CPU.
  const char* burn_env = std::getenv("PODSCOPE_UNWIND_BURN_MS");
  const int64_t burn_ns = burn_env != nullptr ? std::atoll(burn_env) * 1'000'000
                                              : int64_t{10'000'000'000};
  std::atomic<pid_t> tid{0};
  std::atomic<bool> registered{false};
  std::atomic<uint64_t> sink{0};
  std::thread worker([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    while (!registered) std::this_thread::yield();
    for (int64_t burnt = 0; burnt < burn_ns; burnt += 100'000'000) {
      sink += Burn(100'000'000);
      if (burn_env == nullptr &&
          StackSampler::Cost().samples - before.samples >= 150) {
        break;
      }
    }
  });
  while (tid == 0) std::this_thread::yield();
  ASSERT_EQ((*sampler)->RegisterUnsampled({tid.load()}), 1u);
  registered = true;
  worker.join();
  Symbolizer symbolizer;
  int in_recursion = 0;
  const size_t drained = (*sampler)->Drain([&](const StackSampler::Sample& s) {
    for (uint32_t i = 0; i < s.depth; ++i) {
      const Frame f = i == 0 ? symbolizer.Symbolize(s.ips[i])
                             : symbolizer.SymbolizeReturnAddress(s.ips[i]);
      if (f.function.find("Recurse") != std::string::npos) {
        ++in_recursion;
        break;
      }
    }
  });
  (*sampler)->Stop();
  const SamplerCost after = StackSampler::Cost();
  ASSERT_GE(drained, 100u);
  const uint64_t fast = after.fast_unwinds - before.fast_unwinds;
  const uint64_t fallback = after.fallback_unwinds - before.fallback_unwinds;
  const uint64_t samples = after.samples - before.samples;
  if (samples > 0) {
    std::printf(
        "%llu samples, %.2f us of CPU each in the handler; %llu rules "
        "computed so far\n",
        static_cast<unsigned long long>(samples),
        after.timed_samples == before.timed_samples
            ? 0.0
            : static_cast<double>(after.timed_handler_ns -
                                  before.timed_handler_ns) /
                  static_cast<double>(after.timed_samples -
                                      before.timed_samples) /
                  1000.0,
        static_cast<unsigned long long>(GetFastUnwindStats().rules_computed));
  }
  EXPECT_GE(fast, (fast + fallback) * 95 / 100)
      << fast << " fast, " << fallback << " by libunwind";
  EXPECT_GE(in_recursion, static_cast<int>(drained) / 2);
  EXPECT_NE(sink.load(), 0u);
}

#endif  // !PODSCOPE_TSAN

#endif  // x86-64

}  // namespace
}  // namespace podscope::profiler::sampling
