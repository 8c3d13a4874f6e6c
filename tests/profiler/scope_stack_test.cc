// The open scopes of a recording thread, read from another thread: what the
// job's heartbeat tells the coordinator about where a rank is.
#include "podscope/profiler/scope_stack.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "trace_file.h"

namespace podscope::profiler {
namespace {

// A thread that opens scopes, says where it is, and waits to be released.
class ParkedThread {
 public:
  explicit ParkedThread(std::vector<std::string> path) {
    thread_ = std::thread([this, path = std::move(path)] { Enter(path, 0); });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return parked_; });
  }
  ~ParkedThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      release_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  int64_t tid() const { return tid_; }
  int64_t parked_at_ns() const { return parked_at_ns_; }

 private:
  void Enter(const std::vector<std::string>& path, size_t i) {
    if (i == path.size()) {
      std::unique_lock<std::mutex> lock(mu_);
      tid_ = CurrentThreadId();
      parked_at_ns_ = ProfilerNowNs();
      parked_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return release_; });
      return;
    }
    Trace scope(path[i]);
    { PODSCOPE_TRACE("closed_before"); }
    Enter(path, i + 1);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool parked_ = false;
  bool release_ = false;
  int64_t tid_ = 0;
  int64_t parked_at_ns_ = 0;
  std::thread thread_;
};

TEST(ScopeStack, AnotherThreadReadsTheOpenScopesOutermostFirst) {
  ASSERT_TRUE(StartTrace(testing::FreshDir("scope_stack")).ok());
  {
    ParkedThread parked({"train_step", "data_loading", "read_batch"});
    const std::optional<ThreadScopes> seen = ReadThreadScopes(parked.tid());
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(seen->scopes, (std::vector<std::string>{
                                "train_step", "data_loading", "read_batch"}));
    EXPECT_FALSE(seen->main_thread);
    // Entered read_batch (and closed its last scope) just before parking;
    // ticks become nanoseconds through a 10 ms calibration, hence the slack.
    const int64_t slack = 1'000'000;
    EXPECT_GT(seen->innermost_since_ns, 0);
    EXPECT_LE(seen->innermost_since_ns, parked.parked_at_ns() + slack);
    EXPECT_LE(seen->last_event_ns, parked.parked_at_ns() + slack);
    EXPECT_GE(seen->last_event_ns, seen->innermost_since_ns);
    EXPECT_LE(seen->last_event_ns, ProfilerNowNs() + slack);
  }
  ASSERT_TRUE(StopTrace().ok());
}

TEST(ScopeStack, ClosedScopesLeaveTheStack) {
  ASSERT_TRUE(StartTrace(testing::FreshDir("scope_stack_closed")).ok());
  int64_t tid = 0;
  std::thread([&] {
    { PODSCOPE_TRACE("done"); }
    tid = CurrentThreadId();
    const std::optional<ThreadScopes> seen = ReadThreadScopes(tid);
    ASSERT_TRUE(seen.has_value());
    EXPECT_TRUE(seen->scopes.empty());
    EXPECT_GT(seen->last_event_ns, 0);
  }).join();
  // An exited thread is no longer listed.
  EXPECT_FALSE(ReadThreadScopes(tid).has_value());
  ASSERT_TRUE(StopTrace().ok());
}

TEST(ScopeStack, DeeperThanTheStackIsCountedNotNamed) {
  ASSERT_TRUE(StartTrace(testing::FreshDir("scope_stack_deep")).ok());
  std::vector<std::string> path;
  for (int i = 0; i < 20; ++i) path.push_back("level" + std::to_string(i));
  {
    ParkedThread parked(path);
    const std::optional<ThreadScopes> seen = ReadThreadScopes(parked.tid());
    ASSERT_TRUE(seen.has_value());
    ASSERT_EQ(seen->scopes.size(), 16u);
    EXPECT_EQ(seen->scopes.front(), "level0");
    EXPECT_EQ(seen->hidden_depth, 4);
  }
  ASSERT_TRUE(StopTrace().ok());
}

}  // namespace
}  // namespace podscope::profiler
