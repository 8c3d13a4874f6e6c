// What a holder of the job's token can and cannot do to a job it is not a
// rank of, or as another rank: credentials per rank, reserved keys, and
// the store's limits (real gRPC on loopback).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "job_test_util.h"
#include "podscope/job/coordination.h"
#include "podscope/job/keys.h"
#include "podscope/profiler/clock.h"

namespace podscope::job {
namespace {

using ::testing::HasSubstr;

constexpr auto kDenied = absl::StatusCode::kPermissionDenied;
constexpr auto kExhausted = absl::StatusCode::kResourceExhausted;

TEST(CoordinationTrust, TokenIsCheckedOnEveryCall) {
  auto c = Start(1, "s3cret");
  for (const std::string token : {"", "guess"}) {
    auto client = Connect(*c, token);
    const auto unauthenticated = absl::StatusCode::kUnauthenticated;
    EXPECT_EQ(
        client->Register(0, 1, "h", 1, 1, absl::Seconds(2)).status().code(),
        unauthenticated)
        << token;
    EXPECT_EQ(
        client->Heartbeat(0, 1, absl::Seconds(2), &profiler::ProfilerNowNs)
            .status()
            .code(),
        unauthenticated);
    EXPECT_EQ(client->Set("k", "v").code(), unauthenticated);
    EXPECT_EQ(client->Get("k").status().code(), unauthenticated);
    EXPECT_EQ(client->BlockingGet("k", absl::Seconds(1)).status().code(),
              unauthenticated);
    EXPECT_EQ(client->GetDirectory("").status().code(), unauthenticated);
    EXPECT_EQ(client->Delete("k").code(), unauthenticated);
    EXPECT_EQ(client->Barrier("b", 0, absl::Seconds(1)).code(),
              unauthenticated);
    EXPECT_EQ(client->Shutdown(0, absl::Seconds(1)).code(), unauthenticated);
  }
  EXPECT_EQ(c->registered_ranks(), 0);
}

TEST(CoordinationTrust, ObserversReadButCannotChangeTheJob) {
  auto c = Start(1);
  auto rank0 = std::move(RegisterAll(*c, 1)[0]);
  ASSERT_TRUE(rank0->Set("user/k", "v").ok());
  auto observer = Connect(*c);
  EXPECT_EQ(*observer->Get("user/k"), "v");
  EXPECT_EQ(observer->GetDirectory("user/")->size(), 1u);
  absl::Status set = observer->Set("user/k", "forged");
  EXPECT_EQ(set.code(), kDenied);
  EXPECT_THAT(std::string(set.message()), HasSubstr("registered rank"));
  EXPECT_EQ(observer->Delete("user/k").code(), kDenied);
  EXPECT_EQ(observer->Barrier("b", 0, absl::Seconds(1)).code(), kDenied);
  EXPECT_EQ(observer->Shutdown(0, absl::Seconds(1)).code(), kDenied);
  EXPECT_EQ(*rank0->Get("user/k"), "v");
}

TEST(CoordinationTrust, ARankCannotActAsAnother) {
  CoordinatorOptions o;
  o.world_size = 2;
  o.dead_after = absl::Milliseconds(1500);
  auto c = Start(o);
  auto clients = RegisterAll(*c, 2);
  absl::Status shutdown = clients[1]->Shutdown(0, absl::Seconds(1));
  EXPECT_EQ(shutdown.code(), kDenied);
  EXPECT_THAT(std::string(shutdown.message()),
              HasSubstr("rank 1 may not act as rank 0"));
  EXPECT_EQ(clients[1]->Barrier("step", 0, absl::Seconds(1)).code(), kDenied);
  auto beat =
      clients[1]->Heartbeat(0, 77, absl::Seconds(1), &profiler::ProfilerNowNs);
  EXPECT_FALSE(beat.ok());

  // Rank 0 falls silent while rank 1 heartbeats: the forged shutdown did
  // not switch off the watch on rank 0.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (c->job_status().ok() && std::chrono::steady_clock::now() < until) {
    (void)clients[1]->Heartbeat(1, 78, absl::Seconds(1),
                                &profiler::ProfilerNowNs);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(c->job_status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(c->job_status().message()), HasSubstr("rank 0"));
}

TEST(CoordinationTrust, ReservedKeysBelongToTheirRank) {
  auto c = Start(2);
  auto clients = RegisterAll(*c, 2);
  CoordinationClient& r0 = *clients[0];
  CoordinationClient& r1 = *clients[1];
  const std::string profiler0 = absl::StrCat(kProfilerKeyPrefix, 0);
  const std::string profiler1 = absl::StrCat(kProfilerKeyPrefix, 1);
  ASSERT_TRUE(r0.Set(profiler0, "127.0.0.1:9012 h0 1").ok());
  // Rank 1 cannot redirect a capture of rank 0, nor delete its entry.
  absl::Status redirect = r1.Set(profiler0, "10.9.9.9:9012 evil 1");
  EXPECT_EQ(redirect.code(), kDenied);
  EXPECT_THAT(std::string(redirect.message()), HasSubstr(profiler0));
  EXPECT_EQ(r1.Delete(profiler0).code(), kDenied);
  EXPECT_EQ(*r0.Get(profiler0), "127.0.0.1:9012 h0 1");
  EXPECT_TRUE(r1.Set(profiler1, "127.0.0.1:9013 h1 2").ok());
  for (const std::string& key :
       {std::string(kClockProbeKey), std::string(kLaunchMasterPortKey),
        absl::StrCat(kLaunchNprocKeyPrefix, 0), std::string("podscope/x"),
        std::string("podscope/profiler/01"), std::string("launch/other"),
        absl::StrCat(kProfilerKeyPrefix, "1/extra")}) {
    EXPECT_EQ(r1.Set(key, "v").code(), kDenied) << key;
  }
  EXPECT_TRUE(r0.Set(kClockProbeKey, "4242 00").ok());
  EXPECT_TRUE(r1.Set(absl::StrCat(kLaunchNprocKeyPrefix, 1), "8").ok());
  EXPECT_TRUE(r1.Set("user/anything", "v").ok());
}

TEST(CoordinationTrust, KeysAndValuesAreBounded) {
  auto c = Start(1);
  auto rank0 = std::move(RegisterAll(*c, 1)[0]);
  absl::Status long_key = rank0->Set(std::string(1025, 'k'), "v");
  EXPECT_EQ(long_key.code(), kExhausted);
  EXPECT_THAT(std::string(long_key.message()), HasSubstr("1024 bytes a key"));
  EXPECT_TRUE(rank0->Set(std::string(1024, 'k'), "v").ok());
  absl::Status big = rank0->Set("big", std::string((1 << 20) + 1, 'v'));
  EXPECT_EQ(big.code(), kExhausted);
  EXPECT_THAT(std::string(big.message()), HasSubstr("1048576 bytes a value"));
  EXPECT_TRUE(rank0->Set("big", std::string(1 << 20, 'v')).ok());
  EXPECT_EQ(rank0->Get(std::string(5000, 'k')).status().code(), kExhausted);
}

TEST(CoordinationTrust, TheStoreHasAKeyAndByteBudget) {
  CoordinatorOptions o;
  o.limits.max_keys = 10;
  o.limits.max_total_bytes = 64 << 10;
  auto c = Start(o);
  auto rank0 = std::move(RegisterAll(*c, 1)[0]);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(rank0->Set(absl::StrCat("k", i), "v").ok()) << i;
  }
  absl::Status eleventh = rank0->Set("k10", "v");
  EXPECT_EQ(eleventh.code(), kExhausted);
  EXPECT_THAT(std::string(eleventh.message()), HasSubstr("10 keys"));
  EXPECT_TRUE(rank0->Set("k3", "overwritten").ok());
  ASSERT_TRUE(rank0->Delete("k3").ok());
  EXPECT_TRUE(rank0->Set("k10", "v").ok());
  // Bytes: 40 KiB fits, a second 40 KiB does not, replacing the first does.
  ASSERT_TRUE(rank0->Set("k0", std::string(40 << 10, 'a')).ok());
  absl::Status over = rank0->Set("k1", std::string(40 << 10, 'b'));
  EXPECT_EQ(over.code(), kExhausted);
  EXPECT_THAT(std::string(over.message()), HasSubstr("65536 bytes"));
  EXPECT_TRUE(rank0->Set("k0", std::string(50 << 10, 'c')).ok());
}

TEST(CoordinationTrust, LargeDirectoriesArriveWholeInPages) {
  auto c = Start(1);
  auto rank0 = std::move(RegisterAll(*c, 1)[0]);
  // 10,000 keys of 2 KiB: 20 MiB, more than one answer may carry.
  const std::string value(2048, 'x');
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(rank0->Set(absl::StrCat("dir/", 100'000 + i), value).ok());
  }
  ASSERT_TRUE(rank0->Set("dis", "after the prefix").ok());
  auto observer = Connect(*c);
  auto all = observer->GetDirectory("dir/");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 10'000u);
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_EQ((*all)[i].first, absl::StrCat("dir/", 100'000 + i));
    ASSERT_EQ((*all)[i].second.size(), value.size());
  }
}

TEST(CoordinationTrust, OpenBarriersAreBoundedAndFinishedOnesForgotten) {
  CoordinatorOptions o;
  o.world_size = 2;
  o.limits.max_open_barriers = 4;
  auto c = Start(o);
  auto clients = RegisterAll(*c, 2);
  // Rank 0 leaves four barriers open (each times out; it stays counted).
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(clients[0]
                  ->Barrier(absl::StrCat("open", i), 0, absl::Milliseconds(50))
                  .code(),
              absl::StatusCode::kDeadlineExceeded);
  }
  absl::Status fifth = clients[0]->Barrier("open4", 0, absl::Milliseconds(50));
  EXPECT_EQ(fifth.code(), kExhausted);
  EXPECT_THAT(std::string(fifth.message()), HasSubstr("4 barriers"));
  // Rank 1 completes them: they close and are forgotten.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(
        clients[1]->Barrier(absl::StrCat("open", i), 1, absl::Seconds(5)).ok());
  }
  // Hundreds of completed barriers later, there is still room.
  for (int i = 0; i < 200; ++i) {
    std::thread other([&] {
      EXPECT_TRUE(clients[1]
                      ->Barrier(absl::StrCat("step", i), 1, absl::Seconds(5))
                      .ok());
    });
    EXPECT_TRUE(
        clients[0]->Barrier(absl::StrCat("step", i), 0, absl::Seconds(5)).ok());
    other.join();
  }
}

TEST(CoordinationTrust, BeyondLoopbackWithoutTlsIsRefusedUnlessInsecure) {
  CoordinatorOptions o;
  o.bind_host = "0.0.0.0";
  o.token = "job-token";
  auto refused = StartCoordinator(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("PODSCOPE_JOB_TLS_CERT"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--insecure"));
  o.tls.insecure = true;
  auto trusted_network = StartCoordinator(o);
  EXPECT_TRUE(trusted_network.ok()) << trusted_network.status();
}

TEST(CoordinationTrust, ATlsCoordinatorAnswersOnlyClientsThatTrustIt) {
  const std::string dir =
      ::testing::TempDir() + "/coordination-tls-" + std::to_string(::getpid());
  const std::string cmd =
      "mkdir -p " + dir +
      " && openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
      "-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 "
      "-keyout " +
      dir + "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl is needed: " << cmd;
  CoordinatorOptions o;
  o.bind_host = "0.0.0.0";
  o.token = "job-token";
  o.tls.cert_file = dir + "/cert.pem";
  o.tls.key_file = dir + "/key.pem";
  auto c = Start(o);
  ASSERT_NE(c, nullptr);
  // A plaintext client does not get through.
  auto plain = Connect(*c, "job-token");
  auto refused = plain->Register(0, 1, "h", 1, 1, absl::Seconds(2));
  EXPECT_FALSE(refused.ok());
  JobTls trust;
  trust.ca_file = dir + "/cert.pem";
  auto client = CoordinationClient::Create(c->address(), "job-token", trust);
  ASSERT_TRUE(client.ok()) << client.status();
  auto registered = (*client)->Register(0, 1, "h", 1, 1, absl::Seconds(10));
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_TRUE((*client)->Set("k", "over TLS").ok());
  EXPECT_EQ(*(*client)->Get("k"), "over TLS");
  // A CA file that is not there is named.
  JobTls missing;
  missing.ca_file = dir + "/nope.pem";
  auto bad = CoordinationClient::Create(c->address(), "job-token", missing);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("nope.pem"));
}

}  // namespace
}  // namespace podscope::job
