#ifndef PODSCOPE_RUNTIME_COLLECTIVES_H_
#define PODSCOPE_RUNTIME_COLLECTIVES_H_

// Collectives across the processes of a job, over Gloo's TCP transport,
// bootstrapped through the job's job::KeyValueStore (the coordinator's, or a
// FileStore for single-host jobs).
//
// Contract:
// - A Communicator spans `world_size` processes (ranks 0..world_size-1),
//   one Communicator object per process. Every rank must issue the same
//   collectives in the same order. A Communicator runs its collectives one
//   at a time in the order this process issued them: host calls when
//   called, buffer and tensor forms when called (not when their device
//   stream gets to them), the all_reduce IR op when its kernel runs (so do
//   not mix that op with other calls on one communicator while an
//   execution is in flight). Several in flight at once need several
//   communicators, each with its own key prefix.
// - Every dtype of the runtime (f32, i32, pred). ReduceOp on pred: kSum and
//   kMax are logical or, kMin logical and, kMean is InvalidArgument. On
//   i32, kMean is the sum divided by the participants, truncated.
// - Devices of one process (the buffer and tensor forms): the local
//   buffers are reduced in-process first, in device order, then one Gloo
//   call per process; every process must pass the same number of local
//   buffers. Every participant gets bitwise the same result.
// - Errors: a peer that does not take part within the timeout is
//   DEADLINE_EXCEEDED naming the collective and its id; a lost connection
//   is UNAVAILABLE. A communicator that failed should be discarded. In a
//   job (Job::Current()), a collective waiting on a rank the job declares
//   dead or hung ends with the job's error (its code, "the job failed: rank
//   R (host H, ...) ..."), within the job's detection time rather than the
//   timeout, and later collectives fail at once with it.
// - Tracing: while a profiler session records, each collective is a slice
//   on the device's stream track ("device N (CPU) stream"; host-memory
//   calls without a trace device go to a "collectives" stream track), named
//   after the op, with args bytes, op, algorithm, participants, wait_ns and
//   collective_id ("<prefix>#<sequence>", equal on every rank). wait_ns is
//   this rank's arrival to the last rank's arrival, measured as the time
//   spent in a barrier entered at arrival (so it includes one barrier
//   latency, tens of microseconds on a LAN). The barrier runs whether or
//   not this rank records (ranks may differ in that, and every rank must
//   enter it); CommunicatorOptions::measure_wait = false on every rank
//   leaves it out (wait_ns is then 0). An all-reduce of at most 16 KiB per
//   rank enters none: its wait_ns is the time from arrival to its result
//   (which no rank has before the last arrived), so it includes the
//   all-reduce's own latency instead of a barrier's.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "podscope/job/key_value_store.h"
#include "podscope/runtime/ir/shape.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/pjrt/buffer.h"
#include "podscope/runtime/pjrt/device.h"
#include "podscope/runtime/reduce_op.h"

namespace podscope::runtime {

struct CommunicatorOptions {
  // How long a collective (and the connection set-up) waits for peers.
  absl::Duration timeout = absl::Seconds(60);
  // The network interface to bind (e.g. "eth0"); else $GLOO_SOCKET_IFNAME.
  std::string interface;
  // Else the host name or address to bind and advertise. Empty: 127.0.0.1
  // when $MASTER_ADDR is unset or a loopback name, else this host's name.
  std::string hostname;
  // The stream track that host-memory calls are recorded on; null: the
  // process's "collectives" track.
  const Device* trace_device = nullptr;
  // Time each collective's wait (a barrier first). Must be equal on every
  // rank.
  bool measure_wait = true;
};

class Communicator {
 public:
  // Connects to every other rank (all must call Create with the same
  // prefix and world size). Errors: bad rank/size, an unusable interface,
  // peers that do not show up within the timeout.
  static absl::StatusOr<std::unique_ptr<Communicator>> Create(
      job::KeyValueStore& store, int rank, int world_size, std::string prefix,
      const CommunicatorOptions& options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int world_size() const;
  const std::string& prefix() const;
  // The communicator's id in all_reduce IR ops (GraphBuilder::AllReduce): a
  // hash of the prefix, equal on every rank. The latest communicator
  // created with a prefix in this process is the one the id names.
  int64_t id() const;

  // ---- Host memory (the calling thread does the work).
  // In place over `count` elements.
  absl::Status AllReduce(ElementType type, void* data, int64_t count,
                         ReduceOp op);
  // `output` receives world_size * count elements, rank 0's first.
  absl::Status AllGather(ElementType type, const void* input, int64_t count,
                         void* output);
  // Reduces `count` elements over the ranks; this rank receives the range
  // ReduceScatterRange(count, world_size, rank) into `output` (ring).
  absl::Status ReduceScatter(ElementType type, const void* input, int64_t count,
                             void* output, ReduceOp op);
  // The range [begin, end) of elements rank `rank` gets: count / world
  // each, the first count % world ranks one more.
  static std::pair<int64_t, int64_t> ReduceScatterRange(int64_t count,
                                                        int world_size,
                                                        int rank);
  // Root's `count` elements into every rank's `data`.
  absl::Status Broadcast(ElementType type, void* data, int64_t count, int root);
  absl::Status Barrier();

  template <typename T>
  absl::Status AllReduce(absl::Span<T> data, ReduceOp op) {
    return AllReduce(ElementTypeOf<T>::value, data.data(),
                     static_cast<int64_t>(data.size()), op);
  }

  // The seed's xm.rendezvous: every rank must take part; returns every
  // rank's payload in rank order. DEADLINE_EXCEEDED naming the tag and the
  // ranks that did not arrive within the timeout. A tag may be reused; each
  // use is a new rendezvous.
  absl::StatusOr<std::vector<std::string>> Rendezvous(
      absl::string_view tag, absl::string_view payload);

  // ---- Device buffers: one per local device, equal shapes. The work runs
  // on the first buffer's device stream after the inputs are ready; the
  // results (one per input device, in order) are returned at once.
  absl::StatusOr<std::vector<BufferPtr>> AllReduce(
      absl::Span<const BufferPtr> local, ReduceOp op);
  // Every device gets root's first buffer (root: a rank).
  absl::StatusOr<std::vector<BufferPtr>> Broadcast(
      absl::Span<const BufferPtr> local, int root);

  // The internals (src/collectives/state.h).
  struct State;

 private:
  explicit Communicator(std::shared_ptr<State> state);
  // Shared with enqueued device work, which may outlive the object.
  std::shared_ptr<State> state_;
};

// Lazy tensors, one replica per local device: ends the replicas' pending
// steps and all-reduces them (the mean over every process's replicas with
// kMean). Results live on the replicas' devices.
absl::StatusOr<std::vector<Tensor>> AllReduce(Communicator& comm,
                                              absl::Span<const Tensor> replicas,
                                              ReduceOp op);

// Records x all-reduced across the communicator's processes as an op of
// x's pending step (GraphBuilder::AllReduce): it runs on the device stream
// when the step executes, inside the compiled computation, and Grad goes
// through it (sum and mean). One device per process, or one communicator
// per device.
Tensor AllReduce(const Tensor& x, const Communicator& comm, ReduceOp op);

// The seed's broadcast_master_param: rank 0's first replica's parameters
// replace every replica's, in every process. `replicas[r]` is local
// replica r's parameter list (equal lengths and shapes everywhere).
absl::Status BroadcastMasterParams(
    Communicator& comm, absl::Span<std::vector<Tensor>* const> replicas);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_COLLECTIVES_H_
