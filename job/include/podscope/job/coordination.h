// The coordination service of a job and its client. Rank 0 hosts the
// service (Job::Init does it); every rank, the launchers and `podscope
// capture --job` talk to it through CoordinationClient, which is also the
// job's KeyValueStore.
//
// Contract:
// - A service reachable beyond loopback requires a token, and TLS unless
//   told it is on a trusted network (JobTls::insecure); with a token,
//   every call without `authorization: Bearer <token>` is refused with
//   UNAUTHENTICATED.
// - Register: world size checked against the service's, a rank out of
//   range or registered twice (by another process) refused with a message
//   naming both; waits for every rank or the timeout.
// - A rank that stops heartbeating for `dead_after` fails the job: every
//   waiting and later call (blocking get, barriers, heartbeats) answers
//   ABORTED naming the rank and its host.
// - Register answers each rank with a secret; every later call of that
//   client carries (rank, secret). Calls that change the job (Set, Delete,
//   Barrier, Shutdown, Heartbeat) are refused (PERMISSION_DENIED) without a
//   registered rank's credential, or when they name another rank; reads
//   (Get, BlockingGet, GetDirectory) need only the token, so that `podscope
//   capture --job` can look without joining.
// - Keys under "launch/" and "podscope/" are reserved (keys.h): a rank
//   writes only podscope/<kind>/<its rank> and launch/nproc/<its rank>;
//   podscope/clock_probe and launch/master_port are rank 0's.
// - Sizes are bounded (StoreLimits): keys, values, the whole store, open
//   barriers; GetDirectory is served in pages.
// - Every blocking call has a deadline. CoordinationClient::Abort ends the
//   calls in flight and later ones with the given status.
#ifndef PODSCOPE_JOB_COORDINATION_H_
#define PODSCOPE_JOB_COORDINATION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "podscope/job/doctor.h"
#include "podscope/job/environment.h"
#include "podscope/job/key_value_store.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock_probe.h"

namespace podscope::job {

// What one job's store and barriers may hold; a call beyond a limit is
// RESOURCE_EXHAUSTED naming it.
struct StoreLimits {
  size_t max_key_bytes = 1024;
  size_t max_value_bytes = 1 << 20;
  size_t max_total_bytes = size_t{64} << 20;  // keys and values
  size_t max_keys = 100'000;
  // Barriers some rank waits in; finished ones are forgotten.
  size_t max_open_barriers = 10'000;
};

struct CoordinatorOptions {
  // Host to listen on: loopback ("127.0.0.1") needs no token; anything
  // else (e.g. "0.0.0.0") does.
  std::string bind_host = "127.0.0.1";
  int port = 0;  // 0: any free port
  int world_size = 1;
  std::string token;
  // cert_file / key_file: TLS; beyond loopback required unless insecure.
  JobTls tls;
  // Told to clients at registration; a registered rank silent for
  // dead_after fails the job.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  absl::Duration dead_after = absl::Seconds(6);
  StoreLimits limits;
  // The job doctor (docs/doctor.md): when a collective counts as stalled,
  // and whether a stall or desync fails the job (else it is reported with
  // every heartbeat answer while it lasts).
  StallPolicy stall;
  bool fail_on_stall = false;
  // Called on the coordinator's watch thread (no lock held) when the
  // verdict changes, again every 10 s while it stands, and with kHealthy
  // when it ends: rank 0 prints it for the launcher from here.
  std::function<void(const Verdict&)> on_verdict;
};

class Coordinator {
 public:
  virtual ~Coordinator() = default;
  virtual int port() const = 0;
  // "host:port" for clients on this machine.
  virtual std::string address() const = 0;
  // OK, or the job's failure (a dead rank).
  virtual absl::Status job_status() const = 0;
  // How many ranks have registered so far.
  virtual int registered_ranks() const = 0;
  // The job doctor's verdict now.
  virtual Verdict verdict() const = 0;
  // Wakes every waiting call with UNAVAILABLE and stops serving.
  // Idempotent; the destructor calls it.
  virtual void Stop() = 0;
};

// Fails naming the problem: a non-loopback bind without a token, or
// without TLS and not insecure; a port in use, a world size below 1, a TLS
// file that cannot be read.
absl::StatusOr<std::unique_ptr<Coordinator>> StartCoordinator(
    const CoordinatorOptions& options);

struct RegisterResult {
  std::vector<std::string> hosts;  // by rank
  absl::Duration heartbeat_interval;
  absl::Duration dead_after;
};

// The four timestamps of one clock probe: the client's clock at send (t1)
// and receipt (t4), the coordinator's on receipt (t2) and reply (t3);
// reference (coordinator) = local + offset. The same as the lean path's.
using ClockProbe = profiler::PeerClockProbe;

struct HeartbeatResult {
  ClockProbe probe;
  absl::Status job_status;  // the job's failure, if any
  // The job doctor's verdict (kHealthy: none), its sentence, and a key
  // that stays the same while it is about the same collective.
  VerdictKind verdict_kind = VerdictKind::kHealthy;
  std::string verdict;
  std::string verdict_key;
  // What it is about (Verdict's rank, group and sequence; -1 when none).
  int verdict_rank = -1;
  std::string verdict_group;
  int64_t verdict_sequence = -1;
};

// The job as its coordinator sees it (`podscope doctor`).
struct RankView {
  int rank = 0;
  bool registered = false;
  std::string host;
  int64_t pid = 0;
  int64_t heartbeat_age_ms = 0;
  bool leaving = false;  // in the shutdown barrier
  std::optional<RankState> state;
};
struct JobStateView {
  std::vector<RankView> ranks;
  int64_t now_ns = 0;  // the job clock when the coordinator answered
  VerdictKind verdict_kind = VerdictKind::kHealthy;
  std::string verdict;
  absl::Status job_status;
};

class CoordinationClient : public KeyValueStore {
 public:
  // `token` empty: none sent. The connection is made lazily; calls wait
  // for an unreachable coordinator only in Register.
  // `tls.ca_file` set: TLS, trusting that CA (and checking
  // tls.server_name when set).
  static absl::StatusOr<std::unique_ptr<CoordinationClient>> Create(
      const std::string& address, const std::string& token,
      const JobTls& tls = {});

  ~CoordinationClient() override;

  const std::string& address() const { return address_; }

  // Retries until the coordinator answers or `timeout` (UNAVAILABLE saying
  // that no coordinator answered at the address).
  absl::StatusOr<RegisterResult> Register(int rank, int world_size,
                                          const std::string& host, int64_t pid,
                                          uint64_t incarnation,
                                          absl::Duration timeout);
  // One heartbeat and clock probe; `clock` reads the local profiler clock.
  // `state`, when given, tells the job doctor where the rank is (trimmed to
  // DoctorLimits here).
  absl::StatusOr<HeartbeatResult> Heartbeat(int rank, uint64_t incarnation,
                                            absl::Duration timeout,
                                            int64_t (*clock)(),
                                            const RankState* state = nullptr);
  // Every rank's state and the verdict; needs only the job token.
  absl::StatusOr<JobStateView> JobState(absl::Duration timeout);
  // A capture of every rank relayed by the coordinator (profilers.h,
  // RelayThroughCoordinator): `request`'s session, duration, level,
  // sampling, steps and start lead are sent; the coordinator's progress
  // goes to `progress`, and its last message fills `ranks` (one result per
  // rank; `path` as the rank named its file, `<session>/<file>`). When
  // `stop` becomes true (from any thread) the coordinator is asked once to
  // stop every rank; the call still ends with every outcome.
  absl::Status CaptureRanks(
      const profiler::CaptureOptions& request,
      const std::function<void(const profiler::CaptureProgress&)>& progress,
      const std::atomic<bool>* stop,
      std::vector<profiler::WorkerResult>* ranks);
  absl::Status Barrier(std::string_view name, int rank, absl::Duration timeout);
  absl::Status Shutdown(int rank, absl::Duration timeout);

  absl::Status Set(std::string_view key, std::string_view value) override;
  absl::StatusOr<std::string> Get(std::string_view key) override;
  absl::StatusOr<std::string> BlockingGet(std::string_view key,
                                          absl::Duration timeout) override;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> GetDirectory(
      std::string_view prefix) override;
  absl::Status Delete(std::string_view key) override;

  // Cancels the calls in flight; they and every later call return `status`.
  void Abort(const absl::Status& status);

 private:
  class Impl;
  explicit CoordinationClient(std::string address, std::unique_ptr<Impl> impl);
  std::string address_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_COORDINATION_H_
