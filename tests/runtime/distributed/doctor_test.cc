// The job doctor on real processes, real gRPC on loopback and real Gloo:
// three ranks under `podscope launch`, one of them stuck in a scope, slow,
// skipping an all-reduce or calling a different collective. The launcher's
// output carries the verdict in the sentence written out here; a rank only
// slow below the threshold gets none. Thresholds come from
// $PODSCOPE_STALL_AFTER_MS so that each test takes seconds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../common/netns.h"
#include "process.h"
#include "trace_file.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using testing::Process;

const std::string kPodscope = PODSCOPE_BIN;
const std::string kWorker = DIST_WORKER;

struct JobRun {
  int status = -1;
  std::string output;
  std::string dir;
};

JobRun RunScenario(const std::string& scenario, const std::string& on_stall) {
  JobRun run;
  run.dir = testing::FreshDir("podscope-doctor-test", scenario);
  std::vector<std::string> argv = {kPodscope, "launch",     "--nproc_per_node",
                                   "3",       "--grace_ms", "2000"};
  if (!on_stall.empty()) {
    argv.push_back("--on_stall");
    argv.push_back(on_stall);
  }
  for (const char* a : {"doctor", "--victim", "1", "--steps", "4"}) {
    if (std::string(a) == "doctor") argv.push_back(kWorker);
    argv.push_back(a);
  }
  argv.insert(argv.end(), {"--scenario", scenario, "--logdir", run.dir});
  Process launcher(argv, {"PODSCOPE_STALL_AFTER_MS=1500",
                          "PODSCOPE_HEARTBEAT_INTERVAL_MS=200",
                          "PODSCOPE_DOCTOR_DIR=" + run.dir + "/doctor"});
  run.status = launcher.Wait(90000);
  run.output = launcher.output();
  return run;
}

// The verdict lines rank 0 printed for the launcher.
std::vector<std::string> Verdicts(const std::string& output) {
  std::vector<std::string> out;
  std::istringstream in(output);
  std::string line;
  const std::string mark = "[rank 0] podscope: job doctor: ";
  while (std::getline(in, line)) {
    if (line.rfind(mark, 0) == 0) out.push_back(line.substr(mark.size()));
  }
  return out;
}

TEST(JobDoctor, RankStuckInAScopeWithLiveHeartbeatsIsNamed) {
  const JobRun run = RunScenario("stuck", "");
  ASSERT_TRUE(WIFEXITED(run.status)) << run.output;
  // The default policy waits: the victim goes on once it is told.
  EXPECT_EQ(WEXITSTATUS(run.status), 0) << run.output;
  const std::vector<std::string> verdicts = Verdicts(run.output);
  ASSERT_FALSE(verdicts.empty()) << run.output;
  // Barrier #0, all-reduces #1 and #2, then #3 at step 2.
  EXPECT_THAT(
      verdicts[0],
      MatchesRegex("all_reduce #3 of group world \\(f32 x 1024, sum\\) has "
                   "waited [0-9.]+ s: ranks 0, 2 entered it from train_step > "
                   "backward > grad_sync; rank 1 has not \xE2\x80\x94 it has "
                   "been in train_step > data_loading > read_batch for "
                   "[0-9.]+ s \\(last collective: #2\\)"));
  // Every rank was told, the victim too.
  EXPECT_THAT(run.output, MatchesRegex("(.|\n)*verdict reached rank 1 pid "
                                       "[0-9]+: all_reduce #3(.|\n)*"));
}

TEST(JobDoctor, RankOnlySlowBelowTheThresholdIsNotReported) {
  const JobRun run = RunScenario("slow", "");
  ASSERT_TRUE(WIFEXITED(run.status)) << run.output;
  EXPECT_EQ(WEXITSTATUS(run.status), 0) << run.output;
  EXPECT_THAT(Verdicts(run.output), ::testing::IsEmpty()) << run.output;
}

TEST(JobDoctor, RankThatSkippedAnAllReduceIsNamedAndFailsTheJob) {
  const JobRun run = RunScenario("skip", "fail");
  ASSERT_TRUE(WIFEXITED(run.status)) << run.output;
  EXPECT_NE(WEXITSTATUS(run.status), 0) << run.output;
  // Rank 1's step-3 all-reduce was the others' #3: they wait in #4 while
  // rank 1 waits at the finish barrier.
  const std::vector<std::string> verdicts = Verdicts(run.output);
  ASSERT_FALSE(verdicts.empty()) << run.output;
  EXPECT_THAT(verdicts[0],
              MatchesRegex("all_reduce #4 of group world \\(f32 x 1024, "
                           "sum\\) has waited [0-9.]+ s: ranks 0, 2 entered "
                           "it from train_step > backward > grad_sync; rank 1 "
                           "has not \xE2\x80\x94 it has been in finish for "
                           "[0-9.]+ s \\(last collective: #3\\)"));
  EXPECT_THAT(run.output,
              HasSubstr("the job doctor failed the job (--on_stall fail): "
                        "all_reduce #4 of group world"));
  // The launcher's own last word names the rank too.
  EXPECT_THAT(run.output,
              MatchesRegex("(.|\n)*podscope launch: job failed: .*; the job "
                           "doctor said: all_reduce #4 of group world .*; rank "
                           "1 has not .*"));
}

TEST(JobDoctor, RankThatCalledADifferentCollectiveIsADesync) {
  const JobRun run = RunScenario("different", "fail");
  ASSERT_TRUE(WIFEXITED(run.status)) << run.output;
  EXPECT_NE(WEXITSTATUS(run.status), 0) << run.output;
  const std::vector<std::string> verdicts = Verdicts(run.output);
  ASSERT_FALSE(verdicts.empty()) << run.output;
  EXPECT_EQ(verdicts[0],
            "desync at #3 of group world: ranks 0, 2 called all_reduce (f32 x "
            "1024); rank 1 called broadcast (f32 x 1024, root 0) from "
            "train_step > eval > sync_metrics");
}

// A rank killed after its last all-reduce: the existing dead-rank verdict,
// now naming that collective.
TEST(JobDoctor, DeadRankVerdictNamesItsLastCollective) {
  const std::string dir = testing::FreshDir("podscope-doctor-test", "dead");
  Process launcher(
      {kPodscope, "launch", "--nproc_per_node", "3", "--grace_ms", "2000",
       kWorker, "doctor", "--victim", "1", "--steps", "4", "--scenario", "dead",
       "--logdir", dir},
      {"PODSCOPE_STALL_AFTER_MS=1500", "PODSCOPE_HEARTBEAT_INTERVAL_MS=200",
       "PODSCOPE_DEAD_AFTER_MS=2000"});
  std::string line;
  const std::regex parked(R"(\[rank 1\] verdict reached rank 1 pid (\d+))");
  pid_t victim = 0;
  while (victim == 0 && launcher.ReadLine(&line, 60000)) {
    std::smatch m;
    if (std::regex_search(line, m, parked)) victim = std::stoi(m[1]);
  }
  ASSERT_NE(victim, 0) << launcher.output();
  kill(victim, SIGKILL);
  const int status = launcher.Wait(60000);
  const std::string output = launcher.output();
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_NE(WEXITSTATUS(status), 0) << output;
  EXPECT_THAT(output,
              MatchesRegex("(.|\n)*\\[rank 0\\] podscope: rank 0 \\(host "
                           "[^)]+\\): the job failed: rank 1 \\(host [^,]+, "
                           "pid " +
                           std::to_string(victim) +
                           "\\) is dead or hung: no heartbeat for [0-9.]+ s "
                           "\\(last collective: all_reduce #2 of group world, "
                           "finished\\)(.|\n)*"));
}

std::string ReadAll(const std::string& command, int* status) {
  std::string out;
  std::FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

// `podscope doctor --once` on a live job with a rank held in a scope: the
// verdict, its exit status, and where each rank is.
TEST(JobDoctor, DoctorCommandShowsTheLiveJob) {
  const std::string dir = testing::FreshDir("podscope-doctor-test", "live");
  const std::string release = dir + "/release";
  Process launcher(
      {kPodscope, "launch", "--nproc_per_node", "3", "--grace_ms", "2000",
       kWorker, "doctor", "--victim", "1", "--steps", "4", "--scenario", "hold",
       "--release", release, "--logdir", dir},
      {"PODSCOPE_STALL_AFTER_MS=1500", "PODSCOPE_HEARTBEAT_INTERVAL_MS=200"});
  std::string line, coordinator;
  bool judged = false;
  while (!judged && launcher.ReadLine(&line, 60000)) {
    const std::string mark = "[rank 0] coordinator ";
    if (line.rfind(mark, 0) == 0) coordinator = line.substr(mark.size());
    judged = line.find("[rank 0] podscope: job doctor: all_reduce #3") == 0;
  }
  ASSERT_TRUE(judged && !coordinator.empty()) << launcher.output();
  int status = -1;
  const std::string json = ReadAll(
      kPodscope + " doctor --job " + coordinator + " --once --json", &status);
  int text_status = -1;
  const std::string text = ReadAll(
      kPodscope + " doctor --job " + coordinator + " --once", &text_status);
  std::ofstream(release).put('\n');
  EXPECT_EQ(launcher.Wait(60000), 0) << launcher.output();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7) << json;  // stalled
  EXPECT_THAT(json, HasSubstr("\"verdict\": \"stalled\""));
  EXPECT_THAT(json, HasSubstr("\"sentence\": \"all_reduce #3 of group world "
                              "(f32 x 1024, sum) has waited "));
  EXPECT_THAT(json, HasSubstr("\"scopes\": [\"train_step\", "
                              "\"data_loading\", \"read_batch\"]"));
  EXPECT_THAT(json, HasSubstr("\"in_flight\": true"));
  ASSERT_TRUE(WIFEXITED(text_status));
  EXPECT_EQ(WEXITSTATUS(text_status), 7) << text;
  EXPECT_THAT(text, HasSubstr("3 ranks, stalled"));
  EXPECT_THAT(text, HasSubstr("in all_reduce #3 of world for "));
  EXPECT_THAT(text, HasSubstr("last all_reduce #2 of world"));
  EXPECT_THAT(text, HasSubstr("train_step > data_loading > read_batch for "));
}

// No coordinator at the address: exit status 6, saying so.
TEST(JobDoctor, DoctorCommandWithoutACoordinatorSaysSo) {
  int status = -1;
  const std::string out =
      ReadAll(kPodscope + " doctor --once --job 127.0.0.1:1 2>&1", &status);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 6) << out;
  EXPECT_THAT(out, HasSubstr("podscope doctor: job state: the job's "
                             "coordinator at 127.0.0.1:1 is unreachable"));
}

// Every rank wrote its journal when the verdict reached it; its entries'
// collective_id are those its trace carries for the same collectives.
TEST(JobDoctor, JournalAgreesWithTheTracesCollectiveIds) {
  JobRun run;
  run.dir = testing::FreshDir("podscope-doctor-test", "journal");
  const std::string release = run.dir + "/release";
  Process launcher(
      {kPodscope, "launch", "--nproc_per_node", "3", "--grace_ms", "2000",
       kWorker, "doctor", "--victim", "1", "--steps", "4", "--scenario", "hold",
       "--release", release, "--logdir", run.dir},
      {"PODSCOPE_STALL_AFTER_MS=1500", "PODSCOPE_HEARTBEAT_INTERVAL_MS=200",
       "PODSCOPE_DOCTOR_DIR=" + run.dir + "/doctor"});
  // Rank 1 is held until every rank has written its journal.
  // Each rank also dumps its flight recorder's last seconds (the launcher
  // turns the recorder on) beside its journal.
  std::vector<std::string> journals, dumps;
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((journals.size() < 3 || dumps.size() < 3) &&
         std::chrono::steady_clock::now() < give_up) {
    journals.clear();
    dumps.clear();
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(run.dir + "/doctor", ec)) {
      if (e.path().string().ends_with(".journal.json")) {
        journals.push_back(e.path().string());
      } else if (e.path().extension() == ".podtrace") {
        dumps.push_back(e.path().string());
      }
    }
    if (journals.size() < 3 || dumps.size() < 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  std::ofstream(release).put('\n');
  run.status = launcher.Wait(60000);
  run.output = launcher.output();
  ASSERT_TRUE(WIFEXITED(run.status)) << run.output;
  ASSERT_EQ(journals.size(), 3u) << run.output;
  ASSERT_EQ(dumps.size(), 3u) << run.output;
  std::set<int> dumped_ranks;
  for (const std::string& d : dumps) {
    auto f = profiler::testing::ReadTraceFile(d);
    ASSERT_NE(f.reader, nullptr) << d;
    dumped_ranks.insert(f.reader->metadata().process_index());
    size_t slices = 0;
    for (const auto& track : f.tracks) slices += track.events.slices.size();
    EXPECT_GT(slices, 0u) << d;
  }
  EXPECT_EQ(dumped_ranks, (std::set<int>{0, 1, 2}));
  std::set<std::string> traced;
  for (const auto& e : std::filesystem::directory_iterator(run.dir + "/run")) {
    if (e.path().extension() != ".podtrace") continue;
    auto f = profiler::testing::ReadTraceFile(e.path().string());
    ASSERT_NE(f.reader, nullptr);
    const int rank = f.reader->metadata().process_index();
    for (const auto& track : f.tracks) {
      for (uint32_t i = 0; i < track.events.slices.size(); ++i) {
        const std::string id = f.StringArg(track, i, "collective_id");
        if (!id.empty()) {
          traced.insert(std::to_string(rank) + " " +
                        f.Name(track.events.slices[i].name) + " " + id);
        }
      }
    }
  }
  const std::map<std::string, std::string> names = {
      {"barrier", "Barrier"}, {"all_reduce", "AllReduce"}};
  int checked = 0;
  for (const std::string& path : journals) {
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
    std::smatch rank;
    ASSERT_TRUE(std::regex_search(text, rank, std::regex(R"("rank": (\d+))")))
        << text;
    const std::regex entry(
        R"re("collective_id": "([^"]+)", "kind": "([a-z_]+)")re");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), entry);
         it != std::sregex_iterator(); ++it) {
      const std::string key =
          rank[1].str() + " " + names.at((*it)[2].str()) + " " + (*it)[1].str();
      EXPECT_TRUE(traced.count(key)) << key << "\n" << text;
      ++checked;
    }
  }
  // Barrier #0 and all-reduces #1..#3 on every rank but the stuck one.
  EXPECT_GE(checked, 11) << run.output;
}

// `n` network namespaces on one bridge, host i at 10.S.0.(i+2) on its
// interface interface(i); removed on destruction.
class BridgedHosts {
 public:
  explicit BridgedHosts(int n) {
    tag_ = std::to_string(getpid() % 100000);
    subnet_ = 140 + getpid() % 100;
    bridge_ = "pdbd" + tag_;
    ok_ = Run("set -e; ip link add " + bridge_ + " type bridge; ip addr add " +
              Net() + ".1/24 dev " + bridge_ + "; ip link set " + bridge_ +
              " up");
    for (int i = 0; ok_ && i < n; ++i) {
      const std::string ns = "podscope-dd" + tag_ + "-" + std::to_string(i);
      const std::string h = "pdd" + tag_ + "h" + std::to_string(i);
      names_.push_back(ns);
      links_.push_back(h);
      const std::string x = "; ip netns exec " + ns + " ";
      ok_ =
          Run("set -e; ip netns add " + ns + "; ip link add " + h +
              " type veth peer name " + interface(i) + "; ip link set " +
              interface(i) + " netns " + ns + "; ip link set " + h +
              " master " + bridge_ + "; ip link set " + h + " up" + x +
              "ip addr add " + address(i) + "/24 dev " + interface(i) + x +
              "ip link set " + interface(i) + " up" + x + "ip link set lo up");
    }
  }
  ~BridgedHosts() {
    for (size_t i = 0; i < names_.size(); ++i) {
      Run("ip link del " + links_[i] + " >/dev/null 2>&1");
      Run("ip netns del " + names_[i] + " >/dev/null 2>&1");
    }
    Run("ip link del " + bridge_ + " >/dev/null 2>&1");
  }
  bool ok() const { return ok_; }
  const std::string& name(int i) const { return names_[i]; }
  std::string interface(int i) const {
    return "pdd" + tag_ + "n" + std::to_string(i);
  }
  std::string address(int i) const {
    return Net() + "." + std::to_string(i + 2);
  }

 private:
  static bool Run(const std::string& cmd) {
    return std::system(cmd.c_str()) == 0;
  }
  std::string Net() const { return "10." + std::to_string(subnet_) + ".0"; }
  bool ok_ = true;
  int subnet_ = 0;
  std::string tag_, bridge_;
  std::vector<std::string> names_, links_;
};

// The same verdicts in a job across three network-namespace hosts, one
// launcher each: a rank stuck in a scope, then a desync failing the job.
TEST(JobDoctor, VerdictsAcrossThreeHosts) {
  PODSCOPE_SKIP_WITHOUT_NETWORK_NAMESPACES();
  BridgedHosts hosts(3);
  ASSERT_TRUE(hosts.ok()) << "could not set up network namespaces";
  for (const std::string scenario : {"stuck", "different"}) {
    SCOPED_TRACE(scenario);
    const std::string dir =
        testing::FreshDir("podscope-doctor-test", "hosts-" + scenario);
    const std::string rdzv =
        hosts.address(0) + ":" +
        std::to_string(21000 + getpid() % 5000 * 2 + (scenario == "stuck"));
    std::vector<std::unique_ptr<Process>> launchers;
    for (int i = 0; i < 3; ++i) {
      std::vector<std::string> argv = {
          "ip",          "netns",           "exec",
          hosts.name(i), kPodscope,         "launch",
          "--insecure",  "--nnodes",        "3",
          "--node_rank", std::to_string(i), "--nproc_per_node",
          "1",           "--rdzv_endpoint", rdzv};
      if (scenario == "different") {
        argv.insert(argv.end(), {"--on_stall", "fail"});
      }
      argv.insert(argv.end(), {kWorker, "doctor", "--victim", "1", "--steps",
                               "4", "--scenario", scenario, "--logdir", dir});
      launchers.push_back(std::make_unique<Process>(
          argv,
          std::vector<std::string>{"PODSCOPE_JOB_TOKEN=doctor-hosts-token",
                                   "GLOO_SOCKET_IFNAME=" + hosts.interface(i),
                                   "PODSCOPE_STALL_AFTER_MS=1500",
                                   "PODSCOPE_HEARTBEAT_INTERVAL_MS=200"}));
    }
    std::vector<int> status(3);
    for (int i = 0; i < 3; ++i) status[i] = launchers[i]->Wait(90000);
    const std::string host0 = launchers[0]->output();
    const std::vector<std::string> verdicts = Verdicts(host0);
    ASSERT_FALSE(verdicts.empty()) << host0 << launchers[1]->output();
    if (scenario == "stuck") {
      EXPECT_THAT(verdicts[0],
                  MatchesRegex("all_reduce #3 of group world \\(f32 x 1024, "
                               "sum\\) has waited [0-9.]+ s: ranks 0, 2 "
                               "entered it from train_step > backward > "
                               "grad_sync; rank 1 has not \xE2\x80\x94 it has "
                               "been in train_step > data_loading > "
                               "read_batch for [0-9.]+ s \\(last collective: "
                               "#2\\)"));
      EXPECT_THAT(launchers[1]->output(),
                  HasSubstr("verdict reached rank 1 pid"));
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0)
            << launchers[i]->output();
      }
    } else {
      EXPECT_EQ(verdicts[0],
                "desync at #3 of group world: ranks 0, 2 called all_reduce "
                "(f32 x 1024); rank 1 called broadcast (f32 x 1024, root 0) "
                "from train_step > eval > sync_metrics");
      EXPECT_TRUE(WIFEXITED(status[0]) && WEXITSTATUS(status[0]) != 0) << host0;
    }
  }
}

}  // namespace
}  // namespace podscope::runtime
