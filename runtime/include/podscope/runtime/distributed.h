// A process's membership in a multi-process job: who it is (rank, world
// size, node), where the job's coordinator is, and the live connection to
// it. The seed's `dist.init_process_group(init_method="xla://")`.
//
// Contract:
// - Job::Init() reads the job's environment (job::DiscoverJobEnvironment:
//   `podscope launch`, torchrun, SLURM or Open MPI), then registers with the
//   coordinator (rank 0 hosts it in-process) and returns once every rank has
//   registered, or fails naming what was wrong: a world-size mismatch, a rank
//   registered twice, a rank out of range, a coordinator that is not there, a
//   missing or wrong job token.
// - While the job runs, every rank heartbeats the coordinator. A rank that
//   dies or hangs is reported to every survivor within
//   InitOptions::dead_after + heartbeat_interval (about 7 s by default) as
//   an error naming its rank and host; blocking calls (BlockingGet, Barrier)
//   and collectives (collectives.h) end with that error instead of waiting
//   out their timeouts.
// - The heartbeats carry clock probes: every rank keeps its profiler
//   clock's offset and drift to rank 0's and records them into its own
//   trace (profiler/clock_sync.h), so per-rank files line up.
// - After Init, CreateClient() spans every process's devices (global ids
//   in rank order; only this process's devices are addressable).
// - Every call is thread-safe. Errors are absl::Status, never exceptions.
#ifndef PODSCOPE_RUNTIME_DISTRIBUTED_H_
#define PODSCOPE_RUNTIME_DISTRIBUTED_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "podscope/job/doctor.h"
#include "podscope/job/environment.h"
#include "podscope/job/key_value_store.h"

namespace podscope::runtime {

struct InitOptions {
  // Unset: job::DiscoverJobEnvironment().
  std::optional<job::JobEnvironment> environment;
  // How long registration waits for the coordinator and for every rank.
  absl::Duration init_timeout = absl::Seconds(60);
  // Heartbeat period, and how long without a heartbeat makes a rank dead.
  // $PODSCOPE_HEARTBEAT_INTERVAL_MS and $PODSCOPE_DEAD_AFTER_MS override
  // the defaults (not values set here).
  absl::Duration heartbeat_interval = absl::Seconds(1);
  absl::Duration dead_after = absl::Seconds(6);
  // When a peer fails: call on_peer_failure (if set), stop the running
  // trace (so its file ends complete), print the error and exit with
  // job::kPeerFailureExitCode. When false, only the callback runs and
  // health() reports the error.
  bool exit_on_peer_failure = true;
  std::function<void(const absl::Status&)> on_peer_failure;
  // Start a profiler server and publish its address, so that `podscope
  // capture --job` finds this rank. $PODSCOPE_JOB_PROFILER=0 turns it off.
  // It listens on loopback in a job on one machine, else on every
  // interface. Its token is $PODSCOPE_PROFILER_TOKEN, else the job's
  // token, else the profiler server's default (the user's token on
  // loopback).
  bool start_profiler_server = true;
  // Its port: 0 any free one (the seed's 9012 + LOCAL_RANK is what
  // examples/train_mnist asks for). A port in use is reported on stderr
  // and the rank runs on without a server.
  int profiler_port = 0;

  // The job doctor (docs/doctor.md). Every heartbeat tells the coordinator
  // where this rank is (its collective journal and the issuing thread's
  // open scopes); the coordinator calls a collective stalled when some
  // ranks entered it and others had not within the larger of stall_after
  // and 20x its recent median duration ($PODSCOPE_STALL_AFTER_MS
  // overrides), and a desync when ranks entered one sequence number with
  // different calls. Rank 0's options decide for the job.
  absl::Duration stall_after = absl::Seconds(10);
  // What a stall or desync does: kReport keeps the job waiting and reports
  // the verdict (rank 0 prints it, again every 10 s while it lasts); kFail
  // fails the job with it, like a dead rank. $PODSCOPE_ON_STALL=fail|report
  // overrides (`podscope launch --on_stall fail` sets it).
  enum class OnStall { kReport, kFail };
  OnStall on_stall = OnStall::kReport;
  // Where a verdict makes this rank write its journal,
  // <doctor_dir>/<host>.<pid>.journal.json. Empty: $PODSCOPE_DOCTOR_DIR;
  // when that is unset too, nothing is written.
  std::string doctor_dir;
  // Called on the heartbeat thread when this rank learns of a new verdict
  // (after its journal is written).
  std::function<void(const job::Verdict&)> on_doctor_verdict;
};

// The clock of this rank against rank 0's: reference = local + offset,
// local and reference on the profiler clock.
struct JobClock {
  bool valid = false;
  int64_t local_ns = 0;
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;
  double drift_ppm = 0;  // positive: this clock gains on rank 0's
  int probes = 0;
};

class Job {
 public:
  // Joins the job: rank 0 starts the coordinator; every rank registers and
  // waits for the others. Makes the job current (Job::Current()) and sets
  // the profiler's process index and count.
  static absl::StatusOr<std::shared_ptr<Job>> Init(
      const InitOptions& options = {});
  // The job Init made, or null.
  static std::shared_ptr<Job> Current();

  virtual ~Job() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual const job::JobEnvironment& environment() const = 0;
  // Every rank's host name, by rank.
  virtual const std::vector<std::string>& hosts() const = 0;

  // The job's key-value store (served by the coordinator). Keys starting
  // with "podscope/" are the runtime's own.
  virtual job::KeyValueStore& store() = 0;

  // Waits until every rank has called Barrier(name); DEADLINE_EXCEEDED
  // naming the ranks missing, or the job's failure.
  virtual absl::Status Barrier(std::string_view name,
                               absl::Duration timeout) = 0;

  // OK while every peer is alive; else the failure (ABORTED naming the
  // dead rank and its host, or UNAVAILABLE when the coordinator is gone).
  virtual absl::Status health() const = 0;

  virtual JobClock clock() const = 0;

  // The job doctor's verdict as of the last heartbeat (kind and sentence;
  // kHealthy when none).
  virtual job::Verdict doctor_verdict() const = 0;

  // "host:port" of the profiler server Init started and published; empty
  // when it started none.
  virtual std::string profiler_address() const = 0;

  // The shutdown barrier: waits for every rank, then stops heartbeats (and
  // rank 0's coordinator). Idempotent.
  virtual absl::Status Shutdown(absl::Duration timeout = absl::Seconds(60)) = 0;
};

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_DISTRIBUTED_H_
