// A small worker program for the distributed tests, started by `podscope
// launch`, by Launch, or by the tests directly. Modes:
//   env      print the job environment the process was given and found
//            (--fail_rank R --fail_code C: that rank exits with C)
//   job      Job::Init, trace into --logdir, mark --marks shared instants,
//            record steps for --run_ms, then barrier, StopTrace, Shutdown.
//            --step_ms MS records numbered steps (PODSCOPE_STEP) of MS;
//            --skew_ns N / --drift_ppm P give rank r a clock offset of r*N
//            and drift of r*P (the test-only clock hook);
//            --trace_marks_only 1 stops the trace after the marks;
//            --mark_delay_ms: when the first mark is, after Init.
//   sigterm  print "ready", wait for SIGTERM or SIGINT, print "got SIG..."
//   spawn    Launch(fn, 3): each process joins the job, creates a client
//            and prints what it sees.
//   spawn_failure  Launch(fn, 3) where one rank's fn fails (--fail_rank R,
//            --fail_how error|exit); prints "launch failed: STATUS".
//   collective  Job::Init with exit_on_peer_failure false, trace into
//            --logdir, connect a Communicator over the job's store; rank 0
//            then blocks in an all-reduce that rank 1 never joins, prints
//            how it ended ("all-reduce failed after S s: STATUS"), closes
//            its trace and exits with kPeerFailureExitCode.
//   doctor   Job::Init, trace into --logdir, a Communicator "world"; then
//            --steps steps of train_step > data_loading > read_batch and
//            train_step > backward > grad_sync (an f32 x 1024 sum
//            all-reduce). At step 2 rank --victim does what --scenario says:
//            stuck (waits in read_batch until the job doctor's verdict
//            reaches it), dead (the same, then sleeps for the test to kill
//            it), hold (waits in read_batch until the file --release
//            exists), slow (600 ms more in read_batch), skip (no
//            all-reduce), different (a broadcast from eval > sync_metrics
//            instead). Then every rank waits in a "finish" scope at a
//            barrier and shuts down.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "podscope/job/launch.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/collectives.h"
#include "podscope/runtime/distributed.h"
#include "podscope/runtime/pjrt/client.h"

namespace {

namespace rt = podscope::runtime;
namespace prof = podscope::profiler;

std::string Flag(int argc, char** argv, const char* name,
                 std::string fallback) {
  const std::string want = std::string("--") + name;
  for (int i = 1; i + 1 < argc; ++i) {
    if (want == argv[i]) return argv[i + 1];
  }
  return fallback;
}
int64_t IntFlag(int argc, char** argv, const char* name, int64_t fallback) {
  int64_t v = 0;
  // SimpleAtoi writes 0 when it fails: keep the fallback then.
  return absl::SimpleAtoi(Flag(argc, argv, name, ""), &v) ? v : fallback;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "<unset>" : v;
}

int Die(const absl::Status& s) {
  std::fprintf(stderr, "worker error: %s\n", s.ToString().c_str());
  return 2;
}

void SleepUntilMonotonic(int64_t t) {
  while (true) {
    const int64_t left = prof::MonotonicNs() - t;
    if (left >= 0) return;
    if (-left > 2'000'000) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(-left - 1'000'000));
    }
  }
}

int RunEnv(int argc, char** argv) {
  auto env = podscope::job::DiscoverJobEnvironment();
  if (!env.ok()) return Die(env.status());
  std::printf(
      "env RANK=%s WORLD_SIZE=%s LOCAL_RANK=%s LOCAL_WORLD_SIZE=%s "
      "GROUP_RANK=%s MASTER_ADDR=%s MASTER_PORT=%s\n",
      Env("RANK").c_str(), Env("WORLD_SIZE").c_str(), Env("LOCAL_RANK").c_str(),
      Env("LOCAL_WORLD_SIZE").c_str(), Env("GROUP_RANK").c_str(),
      Env("MASTER_ADDR").c_str(), Env("MASTER_PORT").c_str());
  std::printf("found rank %d of %d local %d/%d node %d at %s via %s\n",
              env->rank, env->world_size, env->local_rank,
              env->local_world_size, env->group_rank,
              env->coordinator_address.c_str(), env->launcher.c_str());
  std::fprintf(stderr, "a line on stderr\n");
  std::printf("no newline at the end");
  std::fflush(stdout);
  std::fflush(stderr);
  if (env->rank == IntFlag(argc, argv, "fail_rank", -1)) {
    return static_cast<int>(IntFlag(argc, argv, "fail_code", 1));
  }
  // The others keep running until stopped when one fails.
  if (IntFlag(argc, argv, "fail_rank", -1) >= 0) {
    std::this_thread::sleep_for(std::chrono::seconds(60));
  }
  return 0;
}

volatile sig_atomic_t g_term = 0;
void OnTerm(int signo) { g_term = signo; }

int RunSigterm() {
  signal(SIGTERM, OnTerm);
  signal(SIGINT, OnTerm);
  std::printf("ready\n");
  std::fflush(stdout);
  for (int i = 0; i < 600 && !g_term; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (g_term == SIGTERM) std::printf("got SIGTERM\n");
  if (g_term == SIGINT) std::printf("got SIGINT\n");
  if (!g_term) std::printf("no signal\n");
  return g_term ? 0 : 1;
}

int RunJob(int argc, char** argv) {
  // Skew this rank's profiler clock before anything reads it.
  const char* rank_text = std::getenv("RANK");
  const int64_t rank = rank_text ? std::atoi(rank_text) : 0;
  const int64_t skew = IntFlag(argc, argv, "skew_ns", 0) * rank;
  const int64_t drift = IntFlag(argc, argv, "drift_ppm", 0) * rank;
  if (skew != 0)
    setenv("PODSCOPE_TEST_CLOCK_OFFSET_NS", absl::StrCat(skew).c_str(), 1);
  if (drift != 0)
    setenv("PODSCOPE_TEST_CLOCK_DRIFT_PPM", absl::StrCat(drift).c_str(), 1);

  auto job = rt::Job::Init();
  if (!job.ok()) return Die(job.status());
  const std::string logdir = Flag(argc, argv, "logdir", "");
  if (!logdir.empty()) {
    prof::TraceOptions t;
    t.session_id = "run";
    if (absl::Status s = prof::StartTrace(logdir, t); !s.ok()) return Die(s);
  }
  std::printf("ready rank %d pid %d coordinator %s\n", (*job)->rank(), getpid(),
              (*job)->environment().coordinator_address.c_str());
  std::fflush(stdout);

  const int marks = static_cast<int>(IntFlag(argc, argv, "marks", 0));
  if (marks > 0) {
    int64_t t0 = 0;
    if ((*job)->rank() == 0) {
      t0 = prof::MonotonicNs() +
           IntFlag(argc, argv, "mark_delay_ms", 500) * 1'000'000;
      if (absl::Status s = (*job)->store().Set("test/t0", absl::StrCat(t0));
          !s.ok()) {
        return Die(s);
      }
    } else {
      auto v = (*job)->store().BlockingGet("test/t0", absl::Seconds(30));
      if (!v.ok()) return Die(v.status());
      (void)absl::SimpleAtoi(*v, &t0);
    }
    for (int k = 0; k < marks; ++k) {
      SleepUntilMonotonic(t0 + k * 200'000'000);
      const int64_t before = prof::MonotonicNs();
      PODSCOPE_INSTANT("sync_mark");
      const int64_t after = prof::MonotonicNs();
      std::printf("marked %d %d %lld %lld\n", (*job)->rank(), k,
                  static_cast<long long>(before),
                  static_cast<long long>(after));
    }
    std::fflush(stdout);
  }
  // --trace_marks_only: the local trace ends after the marks, so that the
  // rest of the run can be captured remotely (one session at a time).
  bool tracing = !logdir.empty();
  if (tracing && Flag(argc, argv, "trace_marks_only", "0") == "1") {
    // A trace's clock is bounded where its recorded offsets enclose a time;
    // past the last one the stated uncertainty grows with the drift bound.
    // So the trace ends once the job clock has been probed after the marks.
    const int64_t marked = prof::ProfilerNowNs();
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((*job)->clock().local_ns <= marked &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    auto path = prof::StopTrace();
    if (!path.ok()) return Die(path.status());
    tracing = false;
    std::printf("traced rank %d\n", (*job)->rank());
    std::fflush(stdout);
  }
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(IntFlag(argc, argv, "run_ms", 0));
  // --step_ms: numbered training steps (PODSCOPE_STEP 0, 1, ...) of that
  // length, each holding "inner" scopes; else unnumbered "step" scopes.
  const int64_t step_ms = IntFlag(argc, argv, "step_ms", 0);
  for (int64_t n = 0; std::chrono::steady_clock::now() < end; ++n) {
    if (step_ms <= 0) {
      PODSCOPE_TRACE("step");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    PODSCOPE_STEP(n);
    const auto step_end =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(step_ms);
    while (std::chrono::steady_clock::now() < step_end) {
      PODSCOPE_TRACE("inner");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const rt::JobClock clock = (*job)->clock();
  std::printf("clock rank %d offset %lld uncertainty %lld drift %.1f\n",
              (*job)->rank(), static_cast<long long>(clock.offset_ns),
              static_cast<long long>(clock.uncertainty_ns), clock.drift_ppm);
  if (absl::Status s = (*job)->Barrier("done", absl::Seconds(60)); !s.ok()) {
    return Die(s);
  }
  if (tracing) {
    auto path = prof::StopTrace();
    if (!path.ok()) return Die(path.status());
  }
  if (absl::Status s = (*job)->Shutdown(); !s.ok()) return Die(s);
  std::printf("done rank %d\n", (*job)->rank());
  return 0;
}

// Launch(fn, 3) where rank --fail_rank's fn fails (--fail_how error: it
// returns an error; exit: it exits with status 7) and the others wait to be
// stopped.
int RunSpawnFailure(int argc, char** argv) {
  const int fail_rank = static_cast<int>(IntFlag(argc, argv, "fail_rank", 1));
  const bool exit = Flag(argc, argv, "fail_how", "error") == "exit";
  podscope::job::LaunchOptions options;
  options.failure_wait = absl::Milliseconds(300);
  options.grace_period = absl::Seconds(2);
  absl::Status s = podscope::job::Launch(
      [&]() -> absl::Status {
        const int rank = std::atoi(std::getenv("RANK"));
        std::printf("started rank %d\n", rank);
        std::fflush(stdout);
        if (rank == fail_rank) {
          if (exit) std::_Exit(7);
          return absl::InternalError(absl::StrCat("rank ", rank, " gave up"));
        }
        std::this_thread::sleep_for(std::chrono::seconds(60));
        std::printf("rank %d was not stopped\n", rank);
        return absl::OkStatus();
      },
      3, options);
  if (!s.ok()) {
    std::printf("launch failed: %s\n", s.ToString().c_str());
    return 3;
  }
  std::printf("spawn ok\n");
  return 0;
}

int RunSpawn() {
  absl::Status s = podscope::job::Launch(
      []() -> absl::Status {
        auto job = rt::Job::Init();
        if (!job.ok()) return job.status();
        auto client = rt::CreateClient();
        if (!client.ok()) return client.status();
        std::printf(
            "spawned rank %d of %d: %d devices, %d addressable, process %d of "
            "%d, first addressable id %d\n",
            (*job)->rank(), (*job)->world_size(), (*client)->device_count(),
            (*client)->addressable_device_count(), (*client)->process_index(),
            (*client)->process_count(),
            (*client)->addressable_devices()[0]->id());
        std::fflush(stdout);
        client->reset();
        return (*job)->Shutdown();
      },
      3);
  if (!s.ok()) return Die(s);
  std::printf("spawn ok\n");
  return 0;
}

int RunCollective(int argc, char** argv) {
  rt::InitOptions init;
  init.exit_on_peer_failure = false;
  init.start_profiler_server = false;
  auto job = rt::Job::Init(init);
  if (!job.ok()) return Die(job.status());
  prof::TraceOptions t;
  t.session_id = "run";
  if (absl::Status s = prof::StartTrace(Flag(argc, argv, "logdir", ""), t);
      !s.ok()) {
    return Die(s);
  }
  auto comm = rt::Communicator::Create((*job)->store(), (*job)->rank(),
                                       (*job)->world_size(), "watched");
  if (!comm.ok()) return Die(comm.status());
  if (absl::Status s = (*comm)->Barrier(); !s.ok()) return Die(s);
  std::printf("ready rank %d pid %d\n", (*job)->rank(), getpid());
  std::fflush(stdout);
  if ((*job)->rank() != 0) {
    // Never joins: the test kills or stops this rank.
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 0;
  }
  std::printf("entering all-reduce\n");
  std::fflush(stdout);
  std::vector<float> v(1024, 1.0f);
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status s =
      (*comm)->AllReduce(absl::MakeSpan(v), rt::ReduceOp::kSum);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (s.ok()) {
    std::printf("all-reduce succeeded after %.2f s\n", secs);
    return 1;
  }
  std::printf("all-reduce failed after %.2f s: %s\n", secs,
              s.ToString().c_str());
  std::fflush(stdout);
  auto path = prof::StopTrace();
  if (!path.ok()) return Die(path.status());
  std::printf("trace closed %s\n", path->c_str());
  std::fflush(stdout);
  return podscope::job::kPeerFailureExitCode;
}

// One step of the doctor mode's training loop.
absl::Status DoctorStep(rt::Job& job, rt::Communicator& comm, int step,
                        bool victim, const std::string& scenario,
                        const std::string& release) {
  PODSCOPE_TRACE("train_step");
  {
    PODSCOPE_TRACE("data_loading");
    PODSCOPE_TRACE("read_batch");
    if (victim && (scenario == "stuck" || scenario == "dead")) {
      // Stuck here until the verdict about it arrives by heartbeat.
      const auto give_up =
          std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (job.doctor_verdict().kind ==
                 podscope::job::VerdictKind::kHealthy &&
             std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      std::printf("verdict reached rank %d pid %d: %s\n", job.rank(), getpid(),
                  job.doctor_verdict().sentence.c_str());
      std::fflush(stdout);
      // "dead": the test kills this rank now.
      if (scenario == "dead")
        std::this_thread::sleep_for(std::chrono::seconds(60));
    }
    if (victim && scenario == "hold") {
      // Held here until the test creates the release file.
      while (!std::filesystem::exists(release)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    if (victim && scenario == "slow") {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
    }
  }
  std::vector<float> v(1024, 1.0f);
  if (victim && scenario == "different") {
    PODSCOPE_TRACE("eval");
    PODSCOPE_TRACE("sync_metrics");
    return comm.Broadcast(rt::ElementType::kF32, v.data(), 1024, 0);
  }
  if (victim && scenario == "skip") return absl::OkStatus();
  PODSCOPE_TRACE("backward");
  PODSCOPE_TRACE("grad_sync");
  (void)step;
  return comm.AllReduce(absl::MakeSpan(v), rt::ReduceOp::kSum);
}

int RunDoctor(int argc, char** argv) {
  auto job = rt::Job::Init();
  if (!job.ok()) return Die(job.status());
  prof::TraceOptions t;
  t.session_id = "run";
  if (absl::Status s = prof::StartTrace(Flag(argc, argv, "logdir", ""), t);
      !s.ok()) {
    return Die(s);
  }
  rt::CommunicatorOptions copts;
  copts.timeout = absl::Seconds(40);
  auto comm = rt::Communicator::Create((*job)->store(), (*job)->rank(),
                                       (*job)->world_size(), "world", copts);
  if (!comm.ok()) return Die(comm.status());
  if (absl::Status s = (*comm)->Barrier(); !s.ok()) return Die(s);
  if ((*job)->rank() == 0) {
    std::printf("coordinator %s\n",
                (*job)->environment().coordinator_address.c_str());
    std::fflush(stdout);
  }
  const std::string scenario = Flag(argc, argv, "scenario", "");
  const bool victim = (*job)->rank() == IntFlag(argc, argv, "victim", 1);
  const int steps = static_cast<int>(IntFlag(argc, argv, "steps", 4));
  for (int k = 0; k < steps; ++k) {
    absl::Status s = DoctorStep(**job, **comm, k, victim && k == 2, scenario,
                                Flag(argc, argv, "release", ""));
    if (!s.ok()) return Die(s);
  }
  {
    PODSCOPE_TRACE("finish");
    if (absl::Status s = (*job)->Barrier("finish", absl::Seconds(60));
        !s.ok()) {
      return Die(s);
    }
  }
  auto path = prof::StopTrace();
  if (!path.ok()) return Die(path.status());
  if (absl::Status s = (*job)->Shutdown(); !s.ok()) return Die(s);
  std::printf("done rank %d\n", (*job)->rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "env") return RunEnv(argc, argv);
  if (mode == "sigterm") return RunSigterm();
  if (mode == "job") return RunJob(argc, argv);
  if (mode == "spawn") return RunSpawn();
  if (mode == "spawn_failure") return RunSpawnFailure(argc, argv);
  if (mode == "collective") return RunCollective(argc, argv);
  if (mode == "doctor") return RunDoctor(argc, argv);
  std::fprintf(
      stderr,
      "usage: dist_worker env|sigterm|job|spawn|spawn_failure|collective|"
      "doctor [flags]\n");
  return 64;
}
