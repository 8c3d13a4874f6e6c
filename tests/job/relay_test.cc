// `podscope capture --job` relayed by the job's coordinator (real gRPC on
// loopback): the client makes one call, the coordinator asks every rank's
// profiler server for a worker-side capture that starts at one instant on
// the job's clock, and the client writes the manifest beside the ranks'
// files. The ranks are profiler servers in this process, each recording a
// synthetic load of its own; this process's clock is the job's (it hosts
// the coordinator), as a rank's is once its heartbeats have measured it.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "job_test_util.h"
#include "podscope/job/coordination.h"
#include "podscope/job/coordination_service.grpc.pb.h"
#include "podscope/job/keys.h"
#include "podscope/job/profilers.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/clock_sync.h"
#include "podscope/profiler/server.h"
#include "podscope/trace_format/reader.h"
#include "synthetic_source.h"

namespace podscope::job {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") / ("relay_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A job of `n` ranks whose profiler servers (in this process) publish
// themselves; rank `rootless` (if any) has no capture root.
struct RelayJob {
  std::unique_ptr<Coordinator> coordinator;
  std::vector<std::unique_ptr<CoordinationClient>> ranks;
  std::vector<std::unique_ptr<profiler::ProfilerServer>> servers;
};

RelayJob StartJob(int n, const std::string& root, int rootless = -1) {
  RelayJob job;
  job.coordinator = Start(n);
  if (job.coordinator == nullptr) return job;
  job.ranks = RegisterAll(*job.coordinator, n);
  // This process's clock is the job's: its offset to itself is 0.
  profiler::RecordReferenceClockOffset(
      {profiler::ProfilerNowNs(), 0, 1000, "rank 0"});
  for (int r = 0; r < n; ++r) {
    profiler::ServerOptions options;
    if (r != rootless) options.capture_root = root;
    options.host_name = "rank-host-" + std::to_string(r);
    options.capture_source =
        std::make_shared<profiler::testing::SyntheticSource>(options.host_name,
                                                             2000);
    auto server = profiler::StartServer(0, options);
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return job;
    EXPECT_TRUE(job.ranks[r]
                    ->Set(absl::StrCat(kProfilerKeyPrefix, r),
                          absl::StrCat((*server)->address(), " ",
                                       options.host_name, " ", 100 + r))
                    .ok());
    job.servers.push_back(*std::move(server));
  }
  return job;
}

profiler::CaptureOptions Relayed(const RelayJob& job, const std::string& root,
                                 const std::string& session) {
  profiler::CaptureOptions o;
  o.logdir = root;
  o.session = session;
  o.duration_ms = 400;
  o.start_lead_ms = 100;
  std::string found_at;
  EXPECT_TRUE(
      ResolveJobWorkers(job.coordinator->address(), &o, &found_at).ok());
  EXPECT_EQ(found_at, job.coordinator->address());
  RelayThroughCoordinator(found_at, &o);
  return o;
}

TEST(JobRelay, EveryRankWritesItsFileFromOneCallAtOneInstant) {
  const std::string root = FreshDir("three");
  RelayJob job = StartJob(3, root);
  ASSERT_EQ(job.servers.size(), 3u);
  profiler::CaptureOptions o = Relayed(job, root, "relayed");
  std::atomic<int> reports{0};
  o.progress = [&](const profiler::CaptureProgress& p) {
    EXPECT_EQ(p.workers, 3);
    ++reports;
  };
  auto result = profiler::CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 3);
  EXPECT_GT(reports.load(), 0);
  int64_t start = 0;
  for (size_t i = 0; i < 3; ++i) {
    const profiler::WorkerResult& w = result->workers[i];
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_EQ(w.rank, static_cast<int>(i));
    EXPECT_EQ(w.relayed_by, job.coordinator->address());
    EXPECT_TRUE(w.written_by_worker);
    EXPECT_TRUE(w.job_clock);
    EXPECT_TRUE(w.file_seen) << w.path;
    EXPECT_EQ(w.host, "rank-host-" + std::to_string(i));
    EXPECT_EQ(fs::path(w.path).parent_path().string(), root + "/relayed");
    // One instant on the job clock for every rank, and each window opens
    // there (this process's clock is the job's).
    if (i == 0) start = w.start_at_ns;
    EXPECT_EQ(w.start_at_ns, start);
    EXPECT_NEAR(static_cast<double>(w.window_start_ns),
                static_cast<double>(start), 2e6);
    auto reader = trace_format::TraceReader::Open(w.path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_TRUE((*reader)->report().intact()) << (*reader)->report().Describe();
    EXPECT_GT(w.events, 500u);
  }
  const std::string manifest = ReadAll(result->manifest_path);
  EXPECT_THAT(manifest, HasSubstr("\"mode\": \"worker_writes\""));
  EXPECT_THAT(manifest, HasSubstr("\"relayed_by\": \"" +
                                  job.coordinator->address() + "\""));
  EXPECT_THAT(manifest, HasSubstr("\"clock_source\": \"job\""));
}

TEST(JobRelay, ARankWithoutACaptureRootStopsItBeforeAnythingIsRecorded) {
  const std::string root = FreshDir("rootless");
  RelayJob job = StartJob(2, root, /*rootless=*/1);
  ASSERT_EQ(job.servers.size(), 2u);
  auto result = profiler::CaptureWorkers(Relayed(job, root, "refused"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(), HasSubstr("rank 1 ("));
  EXPECT_THAT(result.status().message(), HasSubstr("no capture root"));
  EXPECT_FALSE(fs::exists(root + "/refused"));
}

TEST(JobRelay, ACancelStopsEveryRankAndTheFilesEndComplete) {
  const std::string root = FreshDir("cancel");
  RelayJob job = StartJob(2, root);
  ASSERT_EQ(job.servers.size(), 2u);
  profiler::CaptureOptions o = Relayed(job, root, "cancelled");
  o.duration_ms = 60'000;
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  // RelayThroughCoordinator takes the flag as it is when called.
  RelayThroughCoordinator(job.coordinator->address(), &o);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    cancel = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto result = profiler::CaptureWorkers(o);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->cancelled);
  for (const profiler::WorkerResult& w : result->workers) {
    ASSERT_TRUE(w.ok) << w.error;
    auto reader = trace_format::TraceReader::Open(w.path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_TRUE((*reader)->report().intact());
  }
}

// A coordinator that answers CaptureRanks with what a hostile one might:
// a file outside the session, a rank answered twice, a rank nobody
// listed, and nothing for a rank that was listed.
class HostileCoordinator final
    : public coordination::CoordinationService::Service {
 public:
  HostileCoordinator() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~HostileCoordinator() override { server_->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  grpc::Status CaptureRanks(
      grpc::ServerContext*, const coordination::CaptureRanksRequest* request,
      grpc::ServerWriter<coordination::CaptureRanksReply>* writer) override {
    coordination::CaptureRanksReply reply;
    reply.set_done(true);
    auto add = [&](int rank, const std::string& path) {
      coordination::RankCapture* r = reply.add_ranks();
      r->set_rank(rank);
      r->set_address("10.0.0." + std::to_string(rank) + ":9012");
      r->set_ok(true);
      r->set_reached(true);
      r->set_path(path);
      r->set_bytes(100);
    };
    const std::string session = request->session();
    add(0, session + "/../../escape.podtrace");
    add(1, session + "/host-1.11.podtrace");
    add(1, session + "/host-1-again.11.podtrace");
    add(7, session + "/host-7.17.podtrace");
    writer->Write(reply);
    return grpc::Status::OK;
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST(JobRelay, AHostileCoordinatorsAnswerIsChecked) {
  HostileCoordinator hostile;
  const std::string root = FreshDir("hostile");
  profiler::CaptureOptions o;
  o.workers = {"10.0.0.0:9012", "10.0.0.1:9012", "10.0.0.2:9012"};
  o.ranks = {0, 1, 2};
  o.job = hostile.address();
  o.logdir = root;
  o.session = "hostile";
  o.duration_ms = 100;
  RelayThroughCoordinator(hostile.address(), &o);
  auto result = profiler::CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->workers.size(), 4u);
  // A file outside the session is refused, naming the worker.
  EXPECT_FALSE(result->workers[0].ok);
  EXPECT_THAT(result->workers[0].error, HasSubstr("10.0.0.0:9012"));
  EXPECT_THAT(result->workers[0].error,
              HasSubstr("not one <host>.<pid>.podtrace file name"));
  EXPECT_TRUE(result->workers[0].path.empty());
  // Rank 1 once, with its first answer, under the session folder.
  EXPECT_TRUE(result->workers[1].ok) << result->workers[1].error;
  EXPECT_EQ(result->workers[1].path, root + "/hostile/host-1.11.podtrace");
  EXPECT_FALSE(result->workers[1].file_seen);  // nothing is there
  // Rank 2 was not recorded, and says so.
  EXPECT_FALSE(result->workers[2].ok);
  EXPECT_THAT(result->workers[2].error, HasSubstr("recorded no rank 2"));
  // Rank 7, which published after this side listed the ranks, is added.
  EXPECT_EQ(result->workers[3].rank, 7);
  for (const auto& entry : fs::directory_iterator(root)) {
    EXPECT_EQ(entry.path().filename(), "hostile") << entry.path();
  }
}

TEST(JobRelay, BadRequestsAndAStrangerAreRefused) {
  CoordinatorOptions co;
  co.world_size = 1;
  co.token = "job-token";
  auto coordinator = Start(co);
  ASSERT_NE(coordinator, nullptr);
  std::vector<profiler::WorkerResult> ranks;
  profiler::CaptureOptions r;
  r.session = "ok-session";
  r.duration_ms = 100;
  {
    auto stranger = Connect(*coordinator, "not-the-token");
    EXPECT_EQ(stranger->CaptureRanks(r, nullptr, nullptr, &ranks).code(),
              absl::StatusCode::kUnauthenticated);
  }
  auto client = Connect(*coordinator, "job-token");
  profiler::CaptureOptions bad = r;
  bad.session = "../escape";
  absl::Status s = client->CaptureRanks(bad, nullptr, nullptr, &ranks);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("session"));
  bad = r;
  bad.duration_ms = 0;
  EXPECT_EQ(client->CaptureRanks(bad, nullptr, nullptr, &ranks).code(),
            absl::StatusCode::kInvalidArgument);
  // A job whose ranks published no profiler server.
  EXPECT_EQ(client->CaptureRanks(r, nullptr, nullptr, &ranks).code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace podscope::job
