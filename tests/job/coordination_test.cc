// The coordination service over real gRPC on loopback: the key-value store,
// blocking gets, barriers, the shutdown barrier, dead-rank detection, and
// every kind of bad input a job can meet.
#include "podscope/job/coordination.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "job_test_util.h"
#include "podscope/profiler/clock.h"

namespace podscope::job {
namespace {

using ::testing::HasSubstr;

TEST(Coordination, KeyValueStoreSemantics) {
  auto c = Start(1);
  auto kv = std::move(RegisterAll(*c, 1)[0]);
  EXPECT_TRUE(kv->Set("a/x", "1").ok());
  EXPECT_TRUE(kv->Set("a/y", std::string("\0bin", 4)).ok());
  EXPECT_TRUE(kv->Set("b", "3").ok());
  EXPECT_EQ(*kv->Get("a/x"), "1");
  EXPECT_EQ(*kv->Get("a/y"), std::string("\0bin", 4));
  EXPECT_TRUE(kv->Set("a/x", "overwritten").ok());
  EXPECT_EQ(*kv->Get("a/x"), "overwritten");
  auto missing = kv->Get("nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("nope"));
  auto dir = kv->GetDirectory("a/");
  ASSERT_TRUE(dir.ok()) << dir.status();
  ASSERT_EQ(dir->size(), 2u);
  EXPECT_EQ((*dir)[0].first, "a/x");
  EXPECT_EQ((*dir)[1].first, "a/y");
  EXPECT_TRUE(kv->GetDirectory("zzz")->empty());
  EXPECT_TRUE(kv->Delete("a/x").ok());
  EXPECT_TRUE(kv->Delete("a/x").ok());  // missing: not an error
  EXPECT_EQ(kv->Get("a/x").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(kv->GetDirectory("a/")->size(), 1u);
}

TEST(Coordination, BlockingGetWaitsForTheKeyOrTimesOut) {
  auto c = Start(1);
  auto kv = Connect(*c);
  auto setter = std::move(RegisterAll(*c, 1)[0]);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(setter->Set("late", "here").ok());
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto v = kv->BlockingGet("late", absl::Seconds(10));
  later.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "here");
  EXPECT_GE(std::chrono::steady_clock::now() - t0,
            std::chrono::milliseconds(250));

  const auto t1 = std::chrono::steady_clock::now();
  auto never = kv->BlockingGet("never", absl::Milliseconds(400));
  const auto waited = std::chrono::steady_clock::now() - t1;
  EXPECT_EQ(never.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(never.status().message()), HasSubstr("never"));
  EXPECT_GE(waited, std::chrono::milliseconds(350));
  EXPECT_LT(waited, std::chrono::seconds(3));
}

TEST(Coordination, BarriersWaitForEveryRankAndTimeOutNamingTheMissing) {
  auto c = Start(3);
  auto clients = RegisterAll(*c, 3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100 * r));
      EXPECT_TRUE(clients[r]->Barrier("step", r, absl::Seconds(10)).ok());
    });
  }
  for (auto& t : threads) t.join();
  // The same name again is a new barrier.
  threads.clear();
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      EXPECT_TRUE(clients[r]->Barrier("step", r, absl::Seconds(10)).ok());
    });
  }
  for (auto& t : threads) t.join();
  // Rank 2 never comes.
  threads.clear();
  std::vector<absl::Status> results(2);
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      results[r] = clients[r]->Barrier("lonely", r, absl::Milliseconds(500));
    });
  }
  for (auto& t : threads) t.join();
  for (const absl::Status& s : results) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("rank(s) 2 did not arrive"));
  }
}

TEST(Coordination, ShutdownBarrierWaitsForAll) {
  auto c = Start(2);
  auto clients = RegisterAll(*c, 2);
  absl::Status first;
  std::thread t([&] { first = clients[0]->Shutdown(0, absl::Seconds(10)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(clients[1]->Shutdown(1, absl::Seconds(10)).ok());
  t.join();
  EXPECT_TRUE(first.ok()) << first;
  EXPECT_TRUE(c->job_status().ok());
}

TEST(Coordination, WrongOrMissingTokenIsUnauthenticated) {
  auto c = Start(1, "s3cret");
  auto none = Connect(*c);
  auto s = none->Set("k", "v");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(s.message()), HasSubstr("token"));
  auto wrong = Connect(*c, "guess");
  EXPECT_EQ(wrong->Get("k").status().code(),
            absl::StatusCode::kUnauthenticated);
  auto right = Connect(*c, "s3cret");
  ASSERT_TRUE(
      right->Register(0, 1, "h", 1, 5, absl::Seconds(10)).status().ok());
  EXPECT_TRUE(right->Set("k", "v").ok());
}

TEST(Coordination, NonLoopbackWithoutTokenIsRefused) {
  CoordinatorOptions o;
  o.bind_host = "0.0.0.0";
  auto c = StartCoordinator(o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("token"));
}

TEST(Coordination, RegistrationRefusesBadRanks) {
  auto c = Start(2);
  auto a = Connect(*c);
  auto b = Connect(*c);
  // World size mismatch.
  auto mismatch = a->Register(1, 3, "h", 1, 1, absl::Seconds(1));
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mismatch.status().message()),
              HasSubstr("world size is 3, but the job's coordinator has 2"));
  // Out of range.
  auto range = a->Register(5, 2, "h", 1, 1, absl::Seconds(1));
  EXPECT_EQ(range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(range.status().message()), HasSubstr("outside"));
  // Rank 1 twice: the first waits for rank 0, the second is refused.
  std::thread first([&] {
    auto r = a->Register(1, 2, "first-host", 11, 111, absl::Milliseconds(1500));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("rank(s) 0"));
  });
  // The second claim comes once the first is in.
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (c->registered_ranks() < 1 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(c->registered_ranks(), 1);
  auto twice = b->Register(1, 2, "second-host", 22, 222, absl::Seconds(1));
  first.join();
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(twice.status().message()),
              HasSubstr("rank 1 is already registered by host first-host"));
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("second-host"));
}

TEST(Coordination, NoCoordinatorIsAClearError) {
  // A port nobody listens on.
  auto c = Start(1);
  const std::string address = c->address();
  c->Stop();
  c.reset();
  auto client = CoordinationClient::Create(address, "");
  ASSERT_TRUE(client.ok());
  auto r = (*client)->Register(0, 1, "h", 1, 1, absl::Milliseconds(500));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("no coordinator answered at " + address));
  auto bad = CoordinationClient::Create("no-port-here", "");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Coordination, SilentRankFailsTheJobAndWakesWaiters) {
  auto c = Start(2, "", absl::Milliseconds(800));
  auto clients = RegisterAll(*c, 2);
  // Rank 0 keeps heartbeating and waits on a key; rank 1 is silent.
  std::atomic<bool> stop{false};
  std::thread beats([&] {
    while (!stop) {
      (void)clients[0]->Heartbeat(0, 77, absl::Seconds(1),
                                  &profiler::ProfilerNowNs);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto v = clients[0]->BlockingGet("never-set", absl::Seconds(30));
  const auto waited = std::chrono::steady_clock::now() - t0;
  stop = true;
  beats.join();
  EXPECT_EQ(v.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("rank 1 (host host1, pid 1001) is dead or hung"));
  EXPECT_LT(waited, std::chrono::seconds(5));
  // The survivor's heartbeat carries the failure too.
  auto beat =
      clients[0]->Heartbeat(0, 77, absl::Seconds(1), &profiler::ProfilerNowNs);
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_EQ(beat->job_status.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(c->job_status().code(), absl::StatusCode::kAborted);
}

TEST(Coordination, HeartbeatProbesMeasureTheClock) {
  auto c = Start(1);
  auto kv = Connect(*c);
  ASSERT_TRUE(kv->Register(0, 1, "h", 1, 5, absl::Seconds(5)).ok());
  // A local clock 2 s behind the coordinator's.
  auto behind = +[]() { return profiler::ProfilerNowNs() - 2'000'000'000; };
  auto beat = kv->Heartbeat(0, 5, absl::Seconds(2), behind);
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_NEAR(static_cast<double>(beat->probe.offset_ns()), 2e9,
              static_cast<double>(beat->probe.round_trip_ns()) / 2 + 1e3);
  EXPECT_GE(beat->probe.round_trip_ns(), 0);
}

TEST(Coordination, AbortEndsCallsInFlight) {
  auto c = Start(1);
  auto kv = Connect(*c);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kv->Abort(absl::AbortedError("rank 3 is gone"));
  });
  auto v = kv->BlockingGet("x", absl::Seconds(30));
  aborter.join();
  EXPECT_EQ(v.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("rank 3 is gone"));
  EXPECT_EQ(kv->Set("y", "z").code(), absl::StatusCode::kAborted);
}

}  // namespace
}  // namespace podscope::job
