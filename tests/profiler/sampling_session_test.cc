// Stack sampling through a session: the file's samples, stacks and frames
// name the function a thread spends its time in.
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "podscope/base/sanitizers.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "trace_file.h"

namespace podscope::profiler {
namespace {

using testing::FreshDir;
using testing::ReadTraceFile;
using testing::TrackView;

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Not inlined, not exported: the sampler must find it through the
// executable's symbol table.
__attribute__((noinline)) double PodscopeHotSpinForSampling(int64_t cpu_ns) {
  double x = 1;
  const int64_t until = ThreadCpuNs() + cpu_ns;
  while (ThreadCpuNs() < until) {
    for (int i = 0; i < 10000; ++i) x = std::sqrt(x + i);
  }
  return x;
}

// Most of `samples` have `function` on their stack; every stack and frame
// they name is in the file.
void ExpectMostSamplesIn(const testing::TraceFile& file,
                         const std::vector<trace_format::StackSample>& samples,
                         const std::string& function) {
  size_t hits = 0;
  for (const auto& s : samples) {
    const auto* stack = file.reader->FindStack(s.stack);
    ASSERT_NE(stack, nullptr);
    for (uint32_t frame_id : stack->frame_ids()) {
      const auto* frame = file.reader->FindFrame(frame_id);
      ASSERT_NE(frame, nullptr);
      if (file.Name(frame->function_name()).find(function) !=
          std::string::npos) {
        ++hits;
        break;
      }
    }
  }
  EXPECT_GT(hits * 2, samples.size()) << hits << " of " << samples.size();
}

TEST(SamplingSession, SamplesNameTheHotFunction) {
  const std::string dir = FreshDir("sampling");
  TraceOptions options;
  options.sampling_hz = 997;
  const SamplingCost before = CurrentSamplingCost();
  ASSERT_TRUE(StartTrace(dir, options).ok());
  double sink = 0;
  std::thread([&] {
    SetThreadName("hot thread");
    PODSCOPE_TRACE("spin");
    sink = PodscopeHotSpinForSampling(600'000'000);
  }).join();
  auto path = StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_GT(sink, 0);
  const auto file = ReadTraceFile(*path);
  auto tracks = file.TracksNamed("hot thread");
  ASSERT_EQ(tracks.size(), 1u);
  const auto& samples = tracks[0]->events.samples;
  ASSERT_GE(samples.size(), 10u);
  ExpectMostSamplesIn(file, samples, "PodscopeHotSpinForSampling");

  // The handler's own cost is counted for the samples it took: some time
  // each, far less than the interval between two samples, and timed for
  // one in 16.
  const SamplingCost after = CurrentSamplingCost();
  const uint64_t taken = after.samples - before.samples;
  EXPECT_GE(taken, samples.size());
  const uint64_t timed = after.timed_samples - before.timed_samples;
  EXPECT_GE(timed, taken / 16);
  EXPECT_LE(timed, taken / 8 + 2);
  const double handler_ns = SamplingHandlerNs(before, after);
  EXPECT_GT(handler_ns, static_cast<double>(taken) * 100);
  EXPECT_LT(handler_ns, static_cast<double>(taken) * 1'000'000);
  // This program's frames all have call frame information: the cached
  // unwinder walks nearly every stack. Under ThreadSanitizer the handler
  // runs late, on its own live stack, and libunwind walks every one.
  const uint64_t fast = after.fast_unwinds - before.fast_unwinds;
#if PODSCOPE_TSAN
  EXPECT_EQ(fast, 0u);
#else
  EXPECT_GE(fast, taken * 9 / 10);
#endif
}

// A thread that never records an event (a math library's pool, a
// framework's own thread) is sampled too, on a track named as the kernel
// names the thread, even when that name is not valid UTF-8.
TEST(SamplingSession, SamplesThreadsThatNeverRecord) {
  const std::string dir = FreshDir("sampling_quiet");
  TraceOptions options;
  options.sampling_hz = 997;
  ASSERT_TRUE(StartTrace(dir, options).ok());
  double sink = 0;
  pid_t tid = 0;
  std::thread([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    pthread_setname_np(pthread_self(), "quiet\xffpool");
    // Long enough to span several drain passes: the first one after the
    // thread's birth registers it.
    sink = PodscopeHotSpinForSampling(900'000'000);
  }).join();
  auto path = StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_GT(sink, 0);
  const auto file = ReadTraceFile(*path);
  const TrackView* quiet = nullptr;
  for (const TrackView& t : file.tracks) {
    if (t.track.tid() == tid) quiet = &t;
  }
  ASSERT_NE(quiet, nullptr) << "no track for the thread that never recorded";
  EXPECT_EQ(quiet->track.name().rfind("quiet", 0), 0u) << quiet->track.name();
  EXPECT_NE(quiet->track.name().find("pool (" + std::to_string(tid) + ")"),
            std::string::npos)
      << quiet->track.name();
  EXPECT_TRUE(quiet->events.slices.empty());
  const auto& samples = quiet->events.samples;
  ASSERT_GE(samples.size(), 10u);
  ExpectMostSamplesIn(file, samples, "PodscopeHotSpinForSampling");
}

// Threads that walk the loaded objects (as a thrown exception does, and as
// the session's own drain does when it maps new code), allocating under the
// loader's lock, while every thread is sampled fast. The handler unwinds
// into the loader too; no thread may wait on another forever.
int AllocateWhileIterating(struct dl_phdr_info*, size_t, void* data) {
  auto* kept = static_cast<std::vector<std::unique_ptr<char[]>>*>(data);
  kept->push_back(std::make_unique<char[]>(64 + kept->size() % 512));
  return 0;
}

__attribute__((noinline)) void ThrowAndCatch(int i) {
  try {
    if (i >= 0) throw std::runtime_error("sampled while unwinding");
  } catch (const std::runtime_error&) {
  }
}

TEST(SamplingSession, ThreadsInTheLoaderWhileSampledNeverDeadlock) {
  const std::string dir = FreshDir("sampling_loader");
  TraceOptions options;
  options.sampling_hz = 4999;
  ASSERT_TRUE(StartTrace(dir, options).ok());
  std::atomic<int> finished{0};
  constexpr int kThreads = 3;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads never record: the session finds and samples them.
      if (t % 2 == 0) PODSCOPE_TRACE("loader walk");
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
      for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
        std::vector<std::unique_ptr<char[]>> kept;
        dl_iterate_phdr(AllocateWhileIterating, &kept);
        ThrowAndCatch(i);
      }
      finished.fetch_add(1);
    });
  }
  // A deadlock would hang the joins: wait with a deadline instead, and end
  // the process with the failure if it passes.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished.load() < kThreads &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (finished.load() < kThreads) {
    ADD_FAILURE() << kThreads - finished.load()
                  << " threads still stuck after 60 s: a deadlock";
    std::_Exit(1);
  }
  for (auto& t : threads) t.join();
  auto path = StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  const auto file = ReadTraceFile(*path);
  size_t samples = 0;
  for (const TrackView& t : file.tracks) samples += t.events.samples.size();
  EXPECT_GT(samples, 100u);
}

}  // namespace
}  // namespace podscope::profiler
