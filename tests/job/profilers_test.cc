// Finding a job's profiler servers through its coordinator (real gRPC on
// loopback): what `podscope capture --job` and the viewer's Capture… use.
#include "podscope/job/profilers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "../common/scoped_env.h"
#include "absl/strings/str_cat.h"
#include "job_test_util.h"
#include "podscope/job/coordination.h"
#include "podscope/job/keys.h"

namespace podscope::job {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::podscope::testing::ScopedEnv;

TEST(JobProfilers, ListsPublishedRanksInRankOrderAndSkipsJunk) {
  auto job = Start(3);
  ASSERT_NE(job, nullptr);
  auto ranks = RegisterAll(*job, 3);
  ASSERT_TRUE(
      ranks[2]
          ->Set(absl::StrCat(kProfilerKeyPrefix, 2), "127.0.0.1:9014 host-b 22")
          .ok());
  ASSERT_TRUE(
      ranks[0]
          ->Set(absl::StrCat(kProfilerKeyPrefix, 0), "127.0.0.1:9012 host-a 20")
          .ok());
  ASSERT_TRUE(ranks[1]->Set(absl::StrCat(kProfilerKeyPrefix, 1), "").ok());
  auto found = ListJobProfilers(job->address(), "");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].rank, 0);
  EXPECT_EQ((*found)[0].address, "127.0.0.1:9012");
  EXPECT_EQ((*found)[0].host, "host-a");
  EXPECT_EQ((*found)[0].pid, 20);
  EXPECT_EQ((*found)[1].rank, 2);
}

TEST(JobProfilers, AJobWithoutProfilersIsNotFound) {
  auto job = Start(1);
  ASSERT_NE(job, nullptr);
  auto found = ListJobProfilers(job->address(), "");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(found.status().message(), HasSubstr(job->address()));
}

TEST(JobProfilers, ARendezvousLeadsToTheJobItLaunched) {
  auto job = Start(1);
  auto rendezvous = Start(1);
  ASSERT_NE(job, nullptr);
  ASSERT_NE(rendezvous, nullptr);
  auto rank0 = std::move(RegisterAll(*job, 1)[0]);
  ASSERT_TRUE(
      rank0->Set(absl::StrCat(kProfilerKeyPrefix, 0), "127.0.0.1:9100 h 1")
          .ok());
  auto node0 = std::move(RegisterAll(*rendezvous, 1)[0]);
  ASSERT_TRUE(node0->Set(kLaunchMasterPortKey, absl::StrCat(job->port())).ok());
  std::string found_at;
  auto found = ListJobProfilers(rendezvous->address(), "", {}, &found_at);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].address, "127.0.0.1:9100");
  // The job's own coordinator, which relays its captures.
  EXPECT_EQ(found_at, job->address());
}

TEST(JobProfilers, ResolveMakesTheRanksTheWorkersWithTheJobTokenFromEnv) {
  auto job = Start(2, "s3cret");
  ASSERT_NE(job, nullptr);
  auto ranks = RegisterAll(*job, 2, "s3cret");
  ASSERT_TRUE(
      ranks[1]
          ->Set(absl::StrCat(kProfilerKeyPrefix, 1), "127.0.0.1:9201 h1 11")
          .ok());
  ASSERT_TRUE(
      ranks[0]
          ->Set(absl::StrCat(kProfilerKeyPrefix, 0), "127.0.0.1:9200 h0 10")
          .ok());
  {
    ScopedEnv unset("PODSCOPE_JOB_TOKEN", std::nullopt);
    profiler::CaptureOptions o;
    absl::Status s = ResolveJobWorkers(job->address(), &o);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  }
  ScopedEnv token("PODSCOPE_JOB_TOKEN", "s3cret");
  profiler::CaptureOptions o;
  o.workers = {"stale:1"};
  ASSERT_TRUE(ResolveJobWorkers(job->address(), &o).ok());
  EXPECT_THAT(o.workers, ElementsAre("127.0.0.1:9200", "127.0.0.1:9201"));
  EXPECT_THAT(o.ranks, ElementsAre(0, 1));
  EXPECT_EQ(o.job, job->address());
  EXPECT_EQ(o.connect.token, "s3cret");

  // A token given explicitly wins over the environment's.
  profiler::CaptureOptions explicit_token;
  explicit_token.connect.token = "wrong";
  EXPECT_EQ(ResolveJobWorkers(job->address(), &explicit_token).code(),
            absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace podscope::job
