// Finding a job's profiler servers through its coordinator (real gRPC on
// loopback): what `podscope capture --job` and the viewer's Capture… use.
#include "podscope/job/profilers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "podscope/job/coordination.h"
#include "podscope/job/keys.h"

namespace podscope::job {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<Coordinator> StartJob(const std::string& token = "") {
  CoordinatorOptions o;
  o.token = token;
  auto c = StartCoordinator(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

void Publish(const Coordinator& c, const std::string& token,
             const std::string& key, const std::string& value) {
  auto client = CoordinationClient::Create(c.address(), token);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->Set(key, value).ok());
}

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

TEST(JobProfilers, ListsPublishedRanksInRankOrderAndSkipsJunk) {
  auto job = StartJob();
  ASSERT_NE(job, nullptr);
  const std::string p(kProfilerKeyPrefix);
  Publish(*job, "", p + "2", "127.0.0.1:9014 host-b 22");
  Publish(*job, "", p + "0", "127.0.0.1:9012 host-a 20");
  Publish(*job, "", p + "notarank", "127.0.0.1:1 x 1");
  Publish(*job, "", p + "1", "");
  auto ranks = ListJobProfilers(job->address(), "");
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  ASSERT_EQ(ranks->size(), 2u);
  EXPECT_EQ((*ranks)[0].rank, 0);
  EXPECT_EQ((*ranks)[0].address, "127.0.0.1:9012");
  EXPECT_EQ((*ranks)[0].host, "host-a");
  EXPECT_EQ((*ranks)[0].pid, 20);
  EXPECT_EQ((*ranks)[1].rank, 2);
}

TEST(JobProfilers, AJobWithoutProfilersIsNotFound) {
  auto job = StartJob();
  ASSERT_NE(job, nullptr);
  auto ranks = ListJobProfilers(job->address(), "");
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(ranks.status().message(), HasSubstr(job->address()));
}

TEST(JobProfilers, ARendezvousLeadsToTheJobItLaunched) {
  auto job = StartJob();
  auto rendezvous = StartJob();
  ASSERT_NE(job, nullptr);
  ASSERT_NE(rendezvous, nullptr);
  Publish(*job, "", absl::StrCat(kProfilerKeyPrefix, 0), "127.0.0.1:9100 h 1");
  Publish(*rendezvous, "", std::string(kLaunchMasterPortKey),
          absl::StrCat(job->port()));
  auto ranks = ListJobProfilers(rendezvous->address(), "");
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  ASSERT_EQ(ranks->size(), 1u);
  EXPECT_EQ((*ranks)[0].address, "127.0.0.1:9100");
}

TEST(JobProfilers, ResolveMakesTheRanksTheWorkersWithTheJobTokenFromEnv) {
  auto job = StartJob("s3cret");
  ASSERT_NE(job, nullptr);
  Publish(*job, "s3cret", absl::StrCat(kProfilerKeyPrefix, 1),
          "127.0.0.1:9201 h1 11");
  Publish(*job, "s3cret", absl::StrCat(kProfilerKeyPrefix, 0),
          "127.0.0.1:9200 h0 10");
  {
    ScopedEnv unset("PODSCOPE_JOB_TOKEN", nullptr);
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
