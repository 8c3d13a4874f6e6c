#ifndef PODSCOPE_RUNTIME_SRC_COLLECTIVES_JOB_WATCH_H_
#define PODSCOPE_RUNTIME_SRC_COLLECTIVES_JOB_WATCH_H_

// Collectives against the health of the job this process belongs to
// (Job::Current()). Gloo waits for a silent peer until the communicator's
// timeout (60 s by default); the job declares a dead or hung rank within
// its detection time (dead_after + a heartbeat, about 7 s). A collective in
// flight when that happens has its Gloo context aborted, so it ends with
// the job's error, which names the rank and its host.

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collectives/gloo_store.h"
#include "collectives/state.h"

namespace podscope::runtime::internal {

// Records how to find the sockets of `state`'s Gloo pairs, once its context
// is connected through `store`.
void RememberPairSockets(Communicator::State& state, const GlooStore& store);

// The job's failure; OK while every peer is alive or without a job.
absl::Status JobFailure();

// The error of collective `what` ended by the job's `failure`, with the
// failure's code: "<what>: the job failed: rank 1 (host h, ...) is dead or
// hung ...", then `detail` (what Gloo said) in parentheses when not empty.
absl::Status JobFailedError(absl::string_view what, const absl::Status& failure,
                            absl::string_view detail = {});

// After a collective lost its connection to a peer: the job's failure once
// the job has declared one, waiting up to its detection time for it (a
// killed peer closes its sockets at once, seconds before its heartbeats are
// missed). OK when there is no job or it reports none within that time.
absl::Status AwaitJobVerdict();

// The time AwaitJobVerdict allows: $PODSCOPE_DEAD_AFTER_MS (6 s) plus two
// of $PODSCOPE_HEARTBEAT_INTERVAL_MS (1 s).
absl::Duration JobDetectionTime();

// While one lives, the communicator's Gloo context is aborted (the sockets
// of its pairs are shut down, so every send and receive pending on them
// fails) if the job fails. Without a job, or for a world of one, it does
// nothing.
class WatchedCollective {
 public:
  explicit WatchedCollective(Communicator::State& state);
  ~WatchedCollective();
  WatchedCollective(const WatchedCollective&) = delete;
  WatchedCollective& operator=(const WatchedCollective&) = delete;

  // The job failure that aborted the context, or OK.
  absl::Status failure() const;

 private:
  friend class JobWatcher;
  Communicator::State& state_;
  bool watched_ = false;
  absl::Status failure_;  // guarded by the watcher's mutex
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_COLLECTIVES_JOB_WATCH_H_
