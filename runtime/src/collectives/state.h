#ifndef PODSCOPE_RUNTIME_SRC_COLLECTIVES_STATE_H_
#define PODSCOPE_RUNTIME_SRC_COLLECTIVES_STATE_H_

// A Communicator's insides, shared by its host-memory operations
// (communicator.cc) and its buffer and tensor forms (device_collectives.cc).

#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "collectives/journal.h"
#include "gloo/context.h"
#include "gloo/transport/device.h"
#include "podscope/profiler/recorder.h"
#include "podscope/runtime/collectives.h"

namespace podscope::runtime {

struct Communicator::State {
  job::KeyValueStore* store = nullptr;
  int rank = 0;
  int world_size = 1;
  std::string prefix;
  int64_t id = 0;
  CommunicatorOptions options;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::Context> context;
  profiler::TrackHandle default_track;
  // What identifies the sockets of the context's pairs: this side's
  // listening address of each pair (an accepted connection's local
  // address) and the peers' (a connection this side made goes to one).
  // job_watch.cc shuts them down to abort the context.
  std::vector<sockaddr_storage> pair_listen_addresses;
  std::vector<sockaddr_storage> peer_listen_addresses;

  // Orders operations: each takes a ticket (its sequence number) when it is
  // issued and runs when its turn comes, so collectives enqueued on device
  // streams and those called on host threads run in the order the process
  // issued them, on every rank alike.
  std::mutex mu;
  std::condition_variable turn;
  uint64_t next_ticket = 0;                                   // guarded by mu
  uint64_t serving = 0;                                       // guarded by mu
  absl::flat_hash_map<std::string, int64_t> rendezvous_uses;  // guarded by mu

  std::chrono::milliseconds timeout() const;

  // What one traced collective records. `participants` counts the devices
  // taking part (world size times local devices for buffer forms).
  struct Call {
    absl::string_view name;       // "AllReduce"
    absl::string_view algorithm;  // "ring"
    absl::string_view op;         // "sum", or "" when not a reduction
    int64_t bytes = 0;
    int participants = 0;
    profiler::TrackHandle track;  // invalid: default_track
    bool measure_wait = true;     // Barrier and Rendezvous do not
    // Set when the body learns by itself when the last rank had arrived
    // (an all-reduce's result): Run enters no wait barrier, and the body
    // stores that moment (profiler::NowNs()) here; 0 when it did not.
    int64_t* last_arrival_ns = nullptr;
    // For the collective journal (journal.h).
    absl::string_view dtype;  // ElementTypeName; "" when none
    int64_t count = -1;       // elements; -1 when none
    int root = -1;
    // Where it was issued, when not on the thread that runs it.
    const internal::IssueSite* site = nullptr;
  };
  uint64_t TakeTicket();
  // Runs `body(tag)` as collective `ticket` (a fresh ticket when negative)
  // once every earlier ticket has run: the wait barrier, the trace slice,
  // and exceptions turned into errors naming the collective. Every ticket
  // taken must be run, or later ones wait (up to the timeout).
  absl::Status Run(const Call& call,
                   const std::function<absl::Status(uint32_t tag)>& body,
                   int64_t ticket = -1);

  // Whether an all-reduce of `bytes` per rank times its wait by its own
  // result (Call::last_arrival_ns) rather than by a barrier entered first:
  // small ones, where the barrier would cost as much as the all-reduce.
  bool WaitFromResult(int64_t bytes) const;

  // One traced all-reduce of `count` elements in place at `data`: `fill`
  // (may be null) runs first inside the turn and writes this process's
  // contribution there (a device form reduces its local buffers); then
  // Gloo's ring all-reduce. `divisor` divides for kMean (the
  // contributions summed), `participants` is what the trace says. The
  // journal records its dtype and count, and `site` when it was issued on
  // another thread than the one running it.
  absl::Status RunAllReduce(ElementType type, void* data, int64_t count,
                            ReduceOp op, int divisor, int participants,
                            profiler::TrackHandle track,
                            const std::function<absl::Status()>& fill,
                            int64_t ticket = -1,
                            const internal::IssueSite* site = nullptr);
};

// The communicator created last in this process with id `id`
// (Communicator::id()), or null.
std::shared_ptr<Communicator::State> LookupCommunicator(int64_t id);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_SRC_COLLECTIVES_STATE_H_
