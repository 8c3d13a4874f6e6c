// A capture while the program records nothing costs little: its drain
// thread sleeps until the next flush instead of waking every few
// milliseconds, and a thread that then fills a block wakes it at once.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "src/thread_buffer.h"

namespace podscope::profiler {
namespace {

std::string FreshDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("podscope-idle-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// The voluntary context switches of this process's thread named `name`
// (each a wake-up from a wait), -1 when there is none.
long VoluntarySwitches(const std::string& name) {
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) continue;
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
        return std::strtol(line.c_str() + 24, nullptr, 10);
      }
    }
  }
  return -1;
}

TEST(IdleSession, TheDrainThreadWakesForFlushesOnly) {
  const std::string dir = FreshDir("wakes");
  ASSERT_TRUE(StartTrace(dir).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long before = VoluntarySwitches("podscope-drain");
  ASSERT_GE(before, 0) << "no thread named podscope-drain";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const long wakes = VoluntarySwitches("podscope-drain") - before;
  ASSERT_TRUE(StopTrace().ok());
  // Ten flushes a second by default, each a few waits (for the writer, for
  // locks): some 30-50 in all; polling every 5 ms would add 200.
  EXPECT_LE(wakes, 100) << "the idle drain thread woke " << wakes
                        << " times in a second";
}

// With flushes 30 s apart, only the bell can bring the drain thread back
// for blocks filled after a quiet spell.
TEST(IdleSession, AFilledBlockWakesTheDrainAtOnce) {
  const std::string dir = FreshDir("bell");
  TraceOptions options;
  options.flush_interval = std::chrono::seconds(30);
  ASSERT_TRUE(StartTrace(dir, options).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  internal::ThreadBuffer* buffer =
      internal::BufferRegistry::Get().ForThisThread();
  for (uint32_t i = 0; i < 4 * internal::Block::kSlots; ++i) {
    PODSCOPE_TRACE("after the quiet");
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (buffer->full.load(std::memory_order_acquire) != nullptr &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(buffer->full.load(std::memory_order_acquire), nullptr)
      << "the filled blocks were not drained within 5 s";
  ASSERT_TRUE(StopTrace().ok());
}

}  // namespace
}  // namespace podscope::profiler
