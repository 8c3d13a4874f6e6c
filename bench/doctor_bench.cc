// bench/run doctor: what the job doctor costs and how fast it speaks
// (docs/doctor.md).
//
//   doctor.journal_ns_per_collective  the journal's work per collective
//                                     (issue site, enter, finish), one rank
//   doctor.tiny_allreduce_ns          a one-element all-reduce of one rank,
//                                     journal included (the reference)
//   doctor.stall_report_s             4 ranks; rank 3's main thread stops
//                                     in a data_loading scope while its
//                                     heartbeats go on: from the moment the
//                                     threshold passes to rank 0's report
//   doctor.desync_report_s            4 ranks; rank 3 calls a broadcast
//                                     where the others all-reduce: from the
//                                     later of the two calls to the report
//   doctor.dump_s                     in the stall above, with the flight
//                                     recorder on in every rank (30 s): from
//                                     rank 0's report to the last of the 4
//                                     ranks' dumps written into the doctor
//                                     folder (each learns of the verdict at
//                                     its next heartbeat)
//
// The ranks are this program run again with `--worker`: real processes,
// real gRPC and Gloo on loopback, the job's default heartbeat (1 s) and a
// 2 s stall threshold ($PODSCOPE_STALL_AFTER_MS).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/journal.h"
#include "common/free_port.h"
#include "common/headline.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/collectives.h"
#include "podscope/runtime/distributed.h"
#include "podscope/runtime/file_store.h"

namespace {

namespace rt = podscope::runtime;
namespace prof = podscope::profiler;
using Clock = std::chrono::steady_clock;
using podscope::bench::FreePort;

constexpr int kRanks = 4;
constexpr int kStallAfterMs = 2000;
std::string g_self;

void BM_Journal(benchmark::State& state) {
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("podscope-doctor-bench-" + std::to_string(getpid())))
          .string();
  auto store = rt::OpenFileStore(dir);
  auto comm = rt::Communicator::Create(**store, 0, 1, "bench");
  if (!store.ok() || !comm.ok()) {
    state.SkipWithError("no communicator");
    return;
  }
  auto& journal = rt::internal::CollectiveJournal::Get();
  constexpr int kRound = 200'000;
  double journal_ns = 1e9, allreduce_ns = 1e9;
  float x = 1;
  for (auto _ : state) {
    for (int r = 0; r < 5; ++r) {
      auto t0 = Clock::now();
      for (int i = 0; i < kRound; ++i) {
        const uint64_t token =
            journal.Enter({"bench_journal", 1, static_cast<uint64_t>(i),
                           "AllReduce", "f32", 1, "sum", -1},
                          rt::internal::IssueSite::Here());
        journal.Finish(token, true);
      }
      journal_ns = std::min(
          journal_ns,
          std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
              kRound);
      t0 = Clock::now();
      for (int i = 0; i < kRound; ++i) {
        (void)(*comm)->AllReduce(absl::MakeSpan(&x, 1), rt::ReduceOp::kSum);
      }
      allreduce_ns = std::min(
          allreduce_ns,
          std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
              kRound);
    }
  }
  std::filesystem::remove_all(dir);
  state.counters["doctor.journal_ns_per_collective"] = journal_ns;
  state.counters["doctor.tiny_allreduce_ns"] = allreduce_ns;
}
BENCHMARK(BM_Journal)->Iterations(1)->Unit(benchmark::kMillisecond);

// A rank: steps of train_step > (data_loading, backward > all_reduce); at
// step 3 rank 3 does what `scenario` says. Rank 0 and rank 3 print
// "entered NS" (CLOCK_MONOTONIC) as they enter step 3's collective (rank 3:
// its data_loading scope, for a stall).
int RunWorker(const std::string& scenario) {
  rt::InitOptions o;
  o.start_profiler_server = false;
  o.exit_on_peer_failure = false;
  auto job = rt::Job::Init(o);
  if (!job.ok()) return 2;
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("podscope-doctor-bench-" + std::to_string(getpid())))
          .string();
  // Scopes are tracked while a session records.
  if (!prof::StartTrace(dir).ok()) return 2;
  rt::CommunicatorOptions copts;
  copts.timeout = absl::Seconds(60);
  auto comm = rt::Communicator::Create((*job)->store(), (*job)->rank(), kRanks,
                                       "world", copts);
  if (!comm.ok()) return 2;
  const int rank = (*job)->rank();
  std::vector<float> v(1024, 1.0f);
  for (int step = 0; step < 5; ++step) {
    PODSCOPE_TRACE("train_step");
    const bool odd = rank == kRanks - 1 && step == 3;
    {
      PODSCOPE_TRACE("data_loading");
      if (odd && scenario == "stall") {
        std::printf("entered %lld\n",
                    static_cast<long long>(prof::MonotonicNs()));
        std::fflush(stdout);
        // The main thread stops here; the heartbeat thread goes on.
        std::mutex mu;
        std::condition_variable cv;
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [] { return false; });
      }
    }
    PODSCOPE_TRACE("backward");
    if ((rank == 0 || odd) && step == 3) {
      std::printf("entered %lld\n",
                  static_cast<long long>(prof::MonotonicNs()));
      std::fflush(stdout);
    }
    if (odd && scenario == "desync") {
      (void)(*comm)->Broadcast(rt::ElementType::kF32, v.data(), 1024, 0);
    } else {
      (void)(*comm)->AllReduce(absl::MakeSpan(v), rt::ReduceOp::kSum);
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(60));
  return 0;
}

struct Rank {
  pid_t pid = -1;
  int out = -1;  // stdout and stderr
  std::string pending;
};

// The next line from `r` within the deadline, or false.
bool ReadLine(Rank& r, Clock::time_point deadline, std::string* line) {
  while (true) {
    const size_t nl = r.pending.find('\n');
    if (nl != std::string::npos) {
      *line = r.pending.substr(0, nl);
      r.pending.erase(0, nl + 1);
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd pf{r.out, POLLIN, 0};
    if (poll(&pf, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = read(r.out, buf, sizeof(buf));
    if (n <= 0) return false;
    r.pending.append(buf, static_cast<size_t>(n));
  }
}

int64_t EnteredAt(const std::string& line) {
  return line.rfind("entered ", 0) == 0 ? std::atoll(line.c_str() + 8) : -1;
}

// The finished dumps (`*.podtrace`) in `dir`.
int DumpsIn(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".podtrace") ++n;
  }
  return n;
}

// Seconds from the threshold (stall) or the later call (desync) to rank 0's
// report; < 0 when none came. With `dump_s`, the ranks run the flight
// recorder and dump into a doctor folder: the seconds from the report to
// the last rank's dump (< 0 when they did not all dump within 20 s).
double MeasureReport(const std::string& scenario, double* dump_s = nullptr) {
  const int port = FreePort();
  const std::string doctor_dir =
      (std::filesystem::temp_directory_path() /
       ("podscope-doctor-bench-dumps-" + std::to_string(getpid())))
          .string();
  std::filesystem::remove_all(doctor_dir);
  std::vector<Rank> ranks(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return -1;
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.push_back("RANK=" + std::to_string(r));
    env_strings.push_back("WORLD_SIZE=" + std::to_string(kRanks));
    env_strings.push_back("MASTER_ADDR=127.0.0.1");
    env_strings.push_back("MASTER_PORT=" + std::to_string(port));
    env_strings.push_back("PODSCOPE_STALL_AFTER_MS=" +
                          std::to_string(kStallAfterMs));
    if (dump_s != nullptr) {
      env_strings.push_back("PODSCOPE_DOCTOR_DIR=" + doctor_dir);
      env_strings.push_back("PODSCOPE_FLIGHT_RECORDER=30s");
    }
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string worker = "--worker", what = scenario;
    char* argv[] = {g_self.data(), worker.data(), what.data(), nullptr};
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(p[1], 1);
      dup2(p[1], 2);
      execve(argv[0], argv, envp.data());
      _exit(127);
    }
    close(p[1]);
    ranks[r] = {pid, p[0], ""};
  }
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  std::string line;
  int64_t odd_entered = -1, zero_entered = -1;
  while (odd_entered < 0 && ReadLine(ranks[kRanks - 1], deadline, &line)) {
    odd_entered = EnteredAt(line);
  }
  double report_s = -1;
  while (ReadLine(ranks[0], deadline, &line)) {
    if (zero_entered < 0) zero_entered = EnteredAt(line);
    if (line.find("podscope: job doctor: ") == std::string::npos) continue;
    const int64_t now = prof::MonotonicNs();
    const int64_t from = scenario == "stall"
                             ? std::min(odd_entered, zero_entered) +
                                   int64_t{kStallAfterMs} * 1'000'000
                             : std::max(odd_entered, zero_entered);
    if (odd_entered > 0 && zero_entered > 0) report_s = (now - from) * 1e-9;
    break;
  }
  if (dump_s != nullptr) {
    *dump_s = -1;
    const auto reported = Clock::now();
    const auto until = reported + std::chrono::seconds(20);
    while (report_s >= 0 && Clock::now() < until) {
      if (DumpsIn(doctor_dir) >= kRanks) {
        *dump_s =
            std::chrono::duration<double>(Clock::now() - reported).count();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  for (Rank& r : ranks) {
    kill(r.pid, SIGKILL);
    waitpid(r.pid, nullptr, 0);
    close(r.out);
    std::error_code ec;
    std::filesystem::remove_all(
        std::filesystem::temp_directory_path() /
            ("podscope-doctor-bench-" + std::to_string(r.pid)),
        ec);
  }
  std::error_code ec;
  std::filesystem::remove_all(doctor_dir, ec);
  return report_s;
}

void BM_Report(benchmark::State& state) {
  double stall = -1, desync = -1, dump = -1;
  for (auto _ : state) {
    stall = MeasureReport("stall", &dump);
    desync = MeasureReport("desync");
  }
  if (stall < 0 || desync < 0) {
    state.SkipWithError("rank 0 did not report the stall or the desync");
    return;
  }
  if (dump < 0) {
    state.SkipWithError("the 4 ranks did not all dump within 20 s");
    return;
  }
  state.counters["doctor.stall_report_s"] = stall;
  state.counters["doctor.desync_report_s"] = desync;
  state.counters["doctor.dump_s"] = dump;
}
BENCHMARK(BM_Report)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

int main(int argc, char** argv) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  g_self = n > 0 ? std::string(exe, n) : argv[0];
  if (argc > 2 && std::strcmp(argv[1], "--worker") == 0) {
    return RunWorker(argv[2]);
  }
  podscope::bench::RegisterHeadline("doctor.journal_ns_per_collective", "ns");
  podscope::bench::RegisterHeadline("doctor.tiny_allreduce_ns", "ns");
  podscope::bench::RegisterHeadline("doctor.stall_report_s", "s");
  podscope::bench::RegisterHeadline("doctor.desync_report_s", "s");
  podscope::bench::RegisterHeadline("doctor.dump_s", "s");
  return podscope::bench::RunBenchmarksWithHeadlines(argc, argv);
}
