// Communicator: connection set-up over the job's store, and the host-memory
// collectives over Gloo (allreduce ring, allgather ring, broadcast, barrier
// from Gloo; reduce-scatter as a ring over Gloo's point-to-point buffers).

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "collectives/gloo_store.h"
#include "collectives/job_watch.h"
#include "collectives/reduce.h"
#include "collectives/state.h"
#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"
#include "gloo/types.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/ir/ir.h"
#include "profiler_observer.h"

namespace podscope::runtime {
namespace {

// Slots of the reduce-scatter ring (outside the prefixes Gloo uses).
constexpr uint8_t kReduceScatterSlotPrefix = 0x40;

// The largest all-reduce (bytes per rank) whose own result times the wait
// instead of a barrier entered first. No rank can have the result before
// the last rank arrived, so the time from arrival to the result is the
// wait plus the all-reduce's latency after the last arrival; up to here
// that latency is of the order of a barrier's (the error the barrier's
// measurement has too), while the barrier would cost a small all-reduce
// about as many messages again. Above, moving the data takes longer than
// a barrier, and the barrier costs little beside it.
constexpr int64_t kWaitFromResultMaxBytes = int64_t{16} << 10;

profiler::TrackHandle HostCollectivesTrack() {
  static const profiler::TrackHandle track =
      profiler::RegisterDeviceStreamTrack(-1, 0, "collectives");
  return track;
}

std::string BindHostname(const CommunicatorOptions& options) {
  if (!options.hostname.empty()) return options.hostname;
  const char* master = std::getenv("MASTER_ADDR");
  // No MASTER_ADDR, or an empty one, is a job on this machine.
  if (master == nullptr || *master == '\0' || base::IsLoopbackHost(master)) {
    return "127.0.0.1";
  }
  return base::HostName();
}

absl::Status ErrorFromGloo(absl::string_view what, const std::exception& e) {
  const std::string message = absl::StrCat(what, ": ", e.what());
  const std::string text = e.what();
  if (text.find("Timed out") != std::string::npos ||
      text.find("DEADLINE_EXCEEDED") != std::string::npos ||
      text.find("timed out") != std::string::npos) {
    return absl::DeadlineExceededError(message);
  }
  if (text.find("onnection") != std::string::npos ||
      text.find("ead of") != std::string::npos ||
      text.find("closed") != std::string::npos) {
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

template <typename Fn>
void WithType(ElementType type, void* data, Fn&& fn) {
  switch (type) {
    case ElementType::kF32:
      fn(static_cast<float*>(data));
      return;
    case ElementType::kI32:
      fn(static_cast<int32_t*>(data));
      return;
    case ElementType::kPred:
      fn(static_cast<uint8_t*>(data));
      return;
  }
}

absl::Status CheckCount(absl::string_view op, int64_t count, const void* p) {
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": negative element count ", count));
  }
  if (count > 0 && p == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": null data"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMean:
      return "mean";
  }
  return "?";
}

namespace {

struct Registry {
  std::mutex mu;
  absl::flat_hash_map<int64_t, std::weak_ptr<Communicator::State>> by_id;
};

Registry& TheRegistry() {
  static Registry* const registry = new Registry();
  return *registry;
}

int64_t IdOfPrefix(const std::string& prefix) {
  const int64_t id =
      static_cast<int64_t>(StableHash64(prefix) & ((uint64_t{1} << 62) - 1));
  return id == 0 ? 1 : id;
}

}  // namespace

std::shared_ptr<Communicator::State> LookupCommunicator(int64_t id) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.by_id.find(id);
  return it == registry.by_id.end() ? nullptr : it->second.lock();
}

std::chrono::milliseconds Communicator::State::timeout() const {
  return std::chrono::milliseconds(
      std::max<int64_t>(1, absl::ToInt64Milliseconds(options.timeout)));
}

uint64_t Communicator::State::TakeTicket() {
  std::lock_guard<std::mutex> lock(mu);
  return next_ticket++;
}

absl::Status Communicator::State::Run(
    const Call& call, const std::function<absl::Status(uint32_t)>& body,
    int64_t ticket) {
  std::unique_lock<std::mutex> lock(mu);
  const uint64_t seq =
      ticket < 0 ? next_ticket++ : static_cast<uint64_t>(ticket);
  if (!turn.wait_for(lock, timeout(), [&] { return serving == seq; })) {
    return absl::DeadlineExceededError(absl::StrCat(
        call.name, " ", prefix, "#", seq, " (rank ", rank, "): collective #",
        serving, " issued before it has not run within ",
        absl::FormatDuration(options.timeout)));
  }
  // The next ticket's turn comes when this one is done, however it ends.
  struct NextTurn {
    State* st;
    ~NextTurn() {
      ++st->serving;
      st->turn.notify_all();
    }
  } next_turn{this};
  const uint32_t tag = static_cast<uint32_t>(seq);
  const std::string id = absl::StrCat(prefix, "#", seq);
  // The journal's sequence is the collective_id's.
  internal::CollectiveJournal& journal = internal::CollectiveJournal::Get();
  const uint64_t journaled = journal.Enter(
      {prefix, world_size, seq,
       std::string_view(call.name.data(), call.name.size()),
       std::string_view(call.dtype.data(), call.dtype.size()), call.count,
       std::string_view(call.op.data(), call.op.size()), call.root},
      call.site != nullptr ? *call.site : internal::IssueSite::Here());
  const bool recording = profiler::IsRecording();
  const int64_t arrival = profiler::NowNs();
  int64_t wait_ns = 0;
  const std::string what = absl::StrCat(call.name, " ", id, " (rank ", rank,
                                        " of ", world_size, ")");
  absl::Status status;
  // A job that has lost a peer fails its collectives at once: their
  // contexts were aborted, or would wait for a rank that is gone.
  if (absl::Status failure =
          world_size > 1 ? internal::JobFailure() : absl::OkStatus();
      !failure.ok()) {
    status = internal::JobFailedError(what, failure);
  } else {
    internal::WatchedCollective watch(*this);
    try {
      // Whether to measure must not depend on this rank's recording state:
      // the barrier is a collective every rank has to enter.
      if (options.measure_wait && call.measure_wait && world_size > 1 &&
          call.last_arrival_ns == nullptr) {
        gloo::BarrierOptions barrier(context);
        barrier.setTag(tag);
        barrier.setTimeout(timeout());
        gloo::barrier(barrier);
        wait_ns = profiler::NowNs() - arrival;
      }
      status = body(tag);
      if (options.measure_wait && call.measure_wait &&
          call.last_arrival_ns != nullptr && *call.last_arrival_ns > 0) {
        wait_ns = std::max<int64_t>(0, *call.last_arrival_ns - arrival);
      }
    } catch (const std::exception& e) {
      status = ErrorFromGloo(what, e);
    }
    if (!status.ok()) {
      if (absl::Status aborted = watch.failure(); !aborted.ok()) {
        status = internal::JobFailedError(what, aborted);
      } else if (absl::IsUnavailable(status)) {
        // A peer killed outright closes its connections before the job
        // misses its heartbeats: wait for the job to name it.
        if (absl::Status failure = internal::AwaitJobVerdict(); !failure.ok()) {
          absl::string_view said = status.message();
          if (absl::StartsWith(said, what)) said.remove_prefix(what.size() + 2);
          status = internal::JobFailedError(what, failure, said);
        }
      }
    }
  }
  if (recording) {
    profiler::RecordSlice(
        call.track.valid() ? call.track : default_track, arrival,
        profiler::NowNs(), std::string_view(call.name.data(), call.name.size()),
        0,
        {{"bytes", call.bytes},
         {"op", std::string_view(call.op.data(), call.op.size())},
         {"algorithm",
          std::string_view(call.algorithm.data(), call.algorithm.size())},
         {"participants", int64_t{call.participants}},
         {"wait_ns", wait_ns},
         {"collective_id", std::string_view(id)},
         {"ok", int64_t{status.ok()}}});
  }
  journal.Finish(journaled, status.ok());
  return status;
}

bool Communicator::State::WaitFromResult(int64_t bytes) const {
  // An empty all-reduce sends nothing: only the barrier can time its wait.
  return bytes > 0 && bytes <= kWaitFromResultMaxBytes && world_size > 1;
}

absl::Status Communicator::State::RunAllReduce(
    ElementType type, void* data, int64_t count, ReduceOp op, int divisor,
    int participants, profiler::TrackHandle track,
    const std::function<absl::Status()>& fill, int64_t ticket,
    const internal::IssueSite* site) {
  PODSCOPE_ASSIGN_OR_RETURN(internal::ReduceFn fn,
                            internal::ReduceFunction(type, op));
  const int64_t bytes = count * ElementSize(type);
  int64_t result_ns = 0;
  Call call{"AllReduce", "ring", ReduceOpName(op), bytes, participants, track};
  call.dtype = ElementTypeName(type);
  call.count = count;
  call.site = site;
  if (WaitFromResult(bytes)) call.last_arrival_ns = &result_ns;
  return Run(
      call,
      [&](uint32_t tag) -> absl::Status {
        if (fill) PODSCOPE_RETURN_IF_ERROR(fill());
        if (count > 0 && world_size > 1) {
          gloo::AllreduceOptions opts(context);
          opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
          WithType(type, data, [&](auto* p) { opts.setOutput(p, count); });
          opts.setReduceFunction(fn);
          opts.setTag(tag);
          opts.setTimeout(timeout());
          gloo::allreduce(opts);
          result_ns = profiler::NowNs();
        }
        if (op == ReduceOp::kMean) {
          internal::DivideInPlace(type, data, count, divisor);
        }
        return absl::OkStatus();
      },
      ticket);
}

Communicator::Communicator(std::shared_ptr<State> state)
    : state_(std::move(state)) {}
Communicator::~Communicator() = default;

int Communicator::rank() const { return state_->rank; }
int Communicator::world_size() const { return state_->world_size; }
const std::string& Communicator::prefix() const { return state_->prefix; }
int64_t Communicator::id() const { return state_->id; }

namespace {

// Gloo writes to its peers' sockets without MSG_NOSIGNAL: a peer that died
// would kill this process with SIGPIPE instead of failing the collective
// with an error that names it. A handler the program installed is kept.
void IgnoreSigpipeUnlessHandled() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 &&
        current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
  });
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Create(
    job::KeyValueStore& store, int rank, int world_size, std::string prefix,
    const CommunicatorOptions& options) {
  IgnoreSigpipeUnlessHandled();
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Communicator: rank ", rank, " is not in a world of ", world_size));
  }
  if (prefix.empty()) {
    return absl::InvalidArgumentError("Communicator: empty key prefix");
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("Communicator: timeout must be > 0");
  }
  auto state = std::make_shared<State>();
  state->store = &store;
  state->rank = rank;
  state->world_size = world_size;
  state->prefix = std::move(prefix);
  state->options = options;
  state->default_track = HostCollectivesTrack();
  if (options.trace_device != nullptr) {
    state->default_track = internal::StreamTrackOf(*options.trace_device);
  }
  gloo::transport::tcp::attr attr;
  std::string iface = options.interface;
  if (iface.empty()) {
    if (const char* env = std::getenv("GLOO_SOCKET_IFNAME")) iface = env;
  }
  if (!iface.empty()) {
    attr.iface = iface;
  } else {
    attr.hostname = BindHostname(options);
  }
  const std::string where =
      iface.empty() ? "host " + attr.hostname : "interface " + iface;
  try {
    state->device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("Communicator '", state->prefix, "': cannot bind ", where,
                     ": ", e.what()));
  }
  try {
    auto context =
        std::make_shared<gloo::rendezvous::Context>(rank, world_size);
    context->setTimeout(state->timeout());
    internal::GlooStore gloo_store(store, absl::StrCat(state->prefix, "/gloo/"),
                                   state->timeout());
    context->connectFullMesh(gloo_store, state->device);
    state->context = std::move(context);
    internal::RememberPairSockets(*state, gloo_store);
  } catch (const std::exception& e) {
    return ErrorFromGloo(
        absl::StrCat("Communicator '", state->prefix, "': rank ", rank, " of ",
                     world_size, " could not connect to its peers (", where,
                     ")"),
        e);
  }
  state->id = IdOfPrefix(state->prefix);
  {
    Registry& registry = TheRegistry();
    std::lock_guard<std::mutex> lock(registry.mu);
    registry.by_id[state->id] = state;
  }
  return std::unique_ptr<Communicator>(new Communicator(std::move(state)));
}

absl::Status Communicator::AllReduce(ElementType type, void* data,
                                     int64_t count, ReduceOp op) {
  PODSCOPE_RETURN_IF_ERROR(CheckCount("AllReduce", count, data));
  return state_->RunAllReduce(type, data, count, op, state_->world_size,
                              state_->world_size, {}, nullptr);
}

absl::Status Communicator::AllGather(ElementType type, const void* input,
                                     int64_t count, void* output) {
  PODSCOPE_RETURN_IF_ERROR(CheckCount("AllGather", count, input));
  if (count > 0 && output == nullptr) {
    return absl::InvalidArgumentError("AllGather: null output");
  }
  State::Call call{"AllGather",        "ring", "", count * ElementSize(type),
                   state_->world_size, {}};
  call.dtype = ElementTypeName(type);
  call.count = count;
  return state_->Run(call, [&](uint32_t tag) {
    if (count == 0) return absl::OkStatus();
    if (state_->world_size == 1) {
      std::memmove(output, input, count * ElementSize(type));
      return absl::OkStatus();
    }
    gloo::AllgatherOptions opts(state_->context);
    WithType(type, const_cast<void*>(input),
             [&](auto* p) { opts.setInput(p, count); });
    WithType(type, output,
             [&](auto* p) { opts.setOutput(p, count * state_->world_size); });
    opts.setTag(tag);
    opts.setTimeout(state_->timeout());
    gloo::allgather(opts);
    return absl::OkStatus();
  });
}

std::pair<int64_t, int64_t> Communicator::ReduceScatterRange(int64_t count,
                                                             int world_size,
                                                             int rank) {
  const int64_t base = count / world_size;
  const int64_t extra = count % world_size;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

absl::Status Communicator::ReduceScatter(ElementType type, const void* input,
                                         int64_t count, void* output,
                                         ReduceOp op) {
  PODSCOPE_RETURN_IF_ERROR(CheckCount("ReduceScatter", count, input));
  PODSCOPE_ASSIGN_OR_RETURN(internal::ReduceFn fn,
                            internal::ReduceFunction(type, op));
  const int world = state_->world_size;
  const int rank = state_->rank;
  const int64_t esize = ElementSize(type);
  State::Call call{"ReduceScatter", "ring", ReduceOpName(op),
                   count * esize,   world,  {}};
  call.dtype = ElementTypeName(type);
  call.count = count;
  return state_->Run(call, [&](uint32_t tag) {
    auto range = [&](int r) { return ReduceScatterRange(count, world, r); };
    const auto [mine_begin, mine_end] = range(rank);
    if (world == 1 || count == 0) {
      if (mine_end > mine_begin) {
        std::memmove(output,
                     static_cast<const char*>(input) + mine_begin * esize,
                     (mine_end - mine_begin) * esize);
      }
      if (op == ReduceOp::kMean) {
        internal::DivideInPlace(type, output, mine_end - mine_begin, world);
      }
      return absl::OkStatus();
    }
    // Ring: at step s rank r sends chunk (r - s - 1) to r + 1 and adds
    // chunk (r - s - 2) from r - 1 into its copy; after world - 1 steps its
    // own chunk r holds every rank's contribution.
    std::vector<char> work(static_cast<const char*>(input),
                           static_cast<const char*>(input) + count * esize);
    const int64_t max_chunk = range(0).second - range(0).first;
    std::vector<char> incoming(std::max<int64_t>(1, max_chunk) * esize);
    auto work_buf =
        state_->context->createUnboundBuffer(work.data(), work.size());
    auto in_buf =
        state_->context->createUnboundBuffer(incoming.data(), incoming.size());
    const int right = (rank + 1) % world;
    const int left = (rank + world - 1) % world;
    auto mod = [&](int i) { return ((i % world) + world) % world; };
    for (int s = 0; s < world - 1; ++s) {
      const uint64_t slot =
          gloo::Slot::build(kReduceScatterSlotPrefix, tag) + uint8_t(s);
      const auto [send_begin, send_end] = range(mod(rank - s - 1));
      const auto [recv_begin, recv_end] = range(mod(rank - s - 2));
      if (send_end > send_begin) {
        work_buf->send(right, slot, send_begin * esize,
                       (send_end - send_begin) * esize);
      }
      if (recv_end > recv_begin) {
        in_buf->recv(left, slot, 0, (recv_end - recv_begin) * esize);
        if (!in_buf->waitRecv(state_->timeout())) {
          return absl::DeadlineExceededError(
              absl::StrCat("ReduceScatter: rank ", left, " did not send"));
        }
        char* dst = work.data() + recv_begin * esize;
        fn(dst, dst, incoming.data(), recv_end - recv_begin);
      }
      if (send_end > send_begin && !work_buf->waitSend(state_->timeout())) {
        return absl::DeadlineExceededError(
            absl::StrCat("ReduceScatter: rank ", right, " did not receive"));
      }
    }
    if (mine_end > mine_begin) {
      std::memcpy(output, work.data() + mine_begin * esize,
                  (mine_end - mine_begin) * esize);
    }
    if (op == ReduceOp::kMean) {
      internal::DivideInPlace(type, output, mine_end - mine_begin, world);
    }
    return absl::OkStatus();
  });
}

absl::Status Communicator::Broadcast(ElementType type, void* data,
                                     int64_t count, int root) {
  PODSCOPE_RETURN_IF_ERROR(CheckCount("Broadcast", count, data));
  if (root < 0 || root >= state_->world_size) {
    return absl::InvalidArgumentError(absl::StrCat("Broadcast: root ", root,
                                                   " is not in a world of ",
                                                   state_->world_size));
  }
  State::Call call{"Broadcast",
                   "one_to_all",
                   "",
                   count * ElementSize(type),
                   state_->world_size,
                   {}};
  call.dtype = ElementTypeName(type);
  call.count = count;
  call.root = root;
  return state_->Run(call, [&](uint32_t tag) {
    if (count == 0 || state_->world_size == 1) return absl::OkStatus();
    gloo::BroadcastOptions opts(state_->context);
    WithType(type, data, [&](auto* p) { opts.setOutput(p, count); });
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(state_->timeout());
    gloo::broadcast(opts);
    return absl::OkStatus();
  });
}

absl::Status Communicator::Barrier() {
  State::Call call{"Barrier", "all_to_all", "", 0, state_->world_size, {}};
  call.measure_wait = false;
  return state_->Run(call, [&](uint32_t tag) {
    if (state_->world_size == 1) return absl::OkStatus();
    gloo::BarrierOptions opts(state_->context);
    opts.setTag(tag);
    opts.setTimeout(state_->timeout());
    gloo::barrier(opts);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<std::string>> Communicator::Rendezvous(
    absl::string_view tag, absl::string_view payload) {
  if (tag.empty() || tag.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Rendezvous: tag '", tag, "' must be non-empty and without '/'"));
  }
  State& st = *state_;
  std::vector<std::string> payloads(st.world_size);
  State::Call call{
      "Rendezvous",  "store", "", static_cast<int64_t>(payload.size()),
      st.world_size, {}};
  call.measure_wait = false;
  absl::Status status = st.Run(call, [&](uint32_t) -> absl::Status {
    const int64_t use = st.rendezvous_uses[std::string(tag)]++;
    const std::string dir =
        absl::StrCat(st.prefix, "/rdv/", tag, "/", use, "/");
    PODSCOPE_RETURN_IF_ERROR(
        st.store->Set(absl::StrCat(dir, st.rank),
                      std::string_view(payload.data(), payload.size())));
    const absl::Time deadline = absl::Now() + st.options.timeout;
    std::vector<int> missing;
    for (int r = 0; r < st.world_size; ++r) {
      absl::StatusOr<std::string> value = st.store->BlockingGet(
          absl::StrCat(dir, r),
          std::max(deadline - absl::Now(), absl::ZeroDuration()));
      if (absl::IsDeadlineExceeded(value.status())) {
        missing.push_back(r);
        continue;
      }
      if (!value.ok()) return value.status();
      payloads[r] = *std::move(value);
    }
    if (!missing.empty()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "Rendezvous '", tag, "': rank", missing.size() > 1 ? "s " : " ",
          absl::StrJoin(missing, ", "), " of ", st.world_size,
          " did not arrive within ", absl::FormatDuration(st.options.timeout),
          " (communicator '", st.prefix, "', rank ", st.rank, ")"));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return payloads;
}

}  // namespace podscope::runtime
