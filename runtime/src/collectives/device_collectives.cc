// The collectives on device buffers and lazy tensors: local devices are
// reduced in-process (in device order), then one Gloo call per process, on
// the first device's stream; the other devices copy the result from it.

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/reduce.h"
#include "collectives/state.h"
#include "gloo/broadcast.h"
#include "lazy/lazy_internal.h"
#include "pjrt/buffer_access.h"
#include "pjrt/device_runtime.h"
#include "podscope/base/status_macros.h"
#include "profiler_observer.h"

namespace podscope::runtime {
namespace {

using internal::BufferAccess;

absl::Status CheckLocal(absl::string_view op,
                        absl::Span<const BufferPtr> local) {
  if (local.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": no buffers"));
  }
  for (size_t i = 0; i < local.size(); ++i) {
    if (local[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": buffer ", i, " is null"));
    }
    if (local[i]->device() == nullptr || !local[i]->device()->addressable()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": buffer ", i, " is not on an addressable device"));
    }
    if (local[i]->shape() != local[0]->shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": buffer ", i, " has shape ", local[i]->shape().ToString(),
          " but buffer 0 has ", local[0]->shape().ToString()));
    }
  }
  return absl::OkStatus();
}

// results[0] (on local[0]'s device) is defined by `work` on that device's
// stream; every other device copies it. `work` always runs (it holds a
// ticket), with the inputs' error and no output when an input failed.
absl::StatusOr<std::vector<BufferPtr>> RunOnFirstStream(
    absl::Span<const BufferPtr> local,
    std::function<absl::Status(absl::Status inputs, void* out)> work) {
  Device* home = local[0]->device();
  const Shape shape = local[0]->shape();
  BufferPtr first = BufferAccess::CreatePending(shape, home);
  std::vector<BufferPtr> inputs(local.begin(), local.end());
  home->runtime()->stream().Enqueue(
      [first, inputs, home, work = std::move(work)] {
        absl::Status status;
        for (const BufferPtr& in : inputs) status.Update(in->ready().Await());
        std::shared_ptr<internal::DeviceAllocation> storage;
        if (status.ok()) {
          auto allocated = home->runtime()->memory().Allocate(
              first->shape().byte_size(), {"collective", ""});
          status = allocated.status();
          if (status.ok()) storage = *std::move(allocated);
        }
        status = work(status, status.ok() ? storage->data() : nullptr);
        BufferAccess::Define(*first, status.ok() ? storage : nullptr, status);
      });
  std::vector<BufferPtr> results = {first};
  for (size_t i = 1; i < local.size(); ++i) {
    PODSCOPE_ASSIGN_OR_RETURN(BufferPtr copy,
                              first->CopyToDevice(local[i]->device()));
    results.push_back(std::move(copy));
  }
  return results;
}

}  // namespace

absl::StatusOr<std::vector<BufferPtr>> Communicator::AllReduce(
    absl::Span<const BufferPtr> local, ReduceOp op) {
  PODSCOPE_RETURN_IF_ERROR(CheckLocal("AllReduce", local));
  const Shape shape = local[0]->shape();
  PODSCOPE_ASSIGN_OR_RETURN(internal::ReduceFn fn,
                            internal::ReduceFunction(shape.element_type(), op));
  std::shared_ptr<State> st = state_;
  std::vector<BufferPtr> inputs(local.begin(), local.end());
  const int participants = st->world_size * static_cast<int>(local.size());
  const profiler::TrackHandle track =
      internal::StreamTrackOf(*local[0]->device());
  const int64_t ticket = static_cast<int64_t>(st->TakeTicket());
  // The journal names the scopes of the thread that issued it, not the
  // stream's.
  const internal::IssueSite site = internal::IssueSite::Here();
  return RunOnFirstStream(local, [st, inputs, shape, op, fn, participants,
                                  track, ticket,
                                  site](absl::Status in, void* out) {
    const int64_t count = shape.num_elements();
    const int64_t bytes = shape.byte_size();
    return st->RunAllReduce(
        shape.element_type(), out, count, op, participants, participants, track,
        [&]() -> absl::Status {
          PODSCOPE_RETURN_IF_ERROR(in);
          if (bytes > 0) {
            std::memcpy(out, BufferAccess::Data(*inputs[0]), bytes);
          }
          for (size_t i = 1; i < inputs.size(); ++i) {
            fn(out, out, BufferAccess::Data(*inputs[i]), count);
          }
          return absl::OkStatus();
        },
        ticket, &site);
  });
}

absl::StatusOr<std::vector<BufferPtr>> Communicator::Broadcast(
    absl::Span<const BufferPtr> local, int root) {
  PODSCOPE_RETURN_IF_ERROR(CheckLocal("Broadcast", local));
  if (root < 0 || root >= world_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Broadcast: root ", root, " is not in a world of ", world_size()));
  }
  std::shared_ptr<State> st = state_;
  BufferPtr source = local[0];
  const profiler::TrackHandle track =
      internal::StreamTrackOf(*local[0]->device());
  const int participants = st->world_size * static_cast<int>(local.size());
  const int64_t ticket = static_cast<int64_t>(st->TakeTicket());
  const internal::IssueSite site = internal::IssueSite::Here();
  return RunOnFirstStream(local, [st, source, root, track, participants, ticket,
                                  site](absl::Status in, void* out) {
    const Shape& shape = source->shape();
    const int64_t bytes = shape.byte_size();
    State::Call call{"Broadcast", "one_to_all", "", bytes, participants, track};
    call.dtype = ElementTypeName(shape.element_type());
    call.count = shape.num_elements();
    call.root = root;
    call.site = &site;
    return st->Run(
        call,
        [&](uint32_t tag) {
          PODSCOPE_RETURN_IF_ERROR(in);
          if (bytes > 0) std::memcpy(out, BufferAccess::Data(*source), bytes);
          if (bytes == 0 || st->world_size == 1) return absl::OkStatus();
          gloo::BroadcastOptions opts(st->context);
          opts.setOutput(static_cast<uint8_t*>(out), bytes);
          opts.setRoot(root);
          opts.setTag(tag);
          opts.setTimeout(st->timeout());
          gloo::broadcast(opts);
          return absl::OkStatus();
        },
        ticket);
  });
}

namespace {

// The replica's computed buffer, ending its context's pending step first.
absl::StatusOr<BufferPtr> BufferOf(const Tensor& t, size_t index) {
  if (!t.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("collectives: replica ", index, " is undefined"));
  }
  PODSCOPE_RETURN_IF_ERROR(t.status());
  if (t.is_pending()) {
    PODSCOPE_RETURN_IF_ERROR(t.context()->Sync());
    PODSCOPE_RETURN_IF_ERROR(t.status());
  }
  if (t.impl()->buffer == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "collectives: replica ", index, " belongs to a step never run"));
  }
  return t.impl()->buffer;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> AllReduce(Communicator& comm,
                                              absl::Span<const Tensor> replicas,
                                              ReduceOp op) {
  std::vector<BufferPtr> buffers;
  for (size_t i = 0; i < replicas.size(); ++i) {
    PODSCOPE_ASSIGN_OR_RETURN(BufferPtr b, BufferOf(replicas[i], i));
    buffers.push_back(std::move(b));
  }
  PODSCOPE_ASSIGN_OR_RETURN(auto results, comm.AllReduce(buffers, op));
  std::vector<Tensor> out;
  for (size_t i = 0; i < replicas.size(); ++i) {
    out.push_back(replicas[i].context()->FromBuffer(results[i]));
  }
  return out;
}

absl::Status BroadcastMasterParams(
    Communicator& comm, absl::Span<std::vector<Tensor>* const> replicas) {
  if (replicas.empty()) {
    return absl::InvalidArgumentError("BroadcastMasterParams: no replicas");
  }
  for (size_t r = 0; r < replicas.size(); ++r) {
    if (replicas[r] == nullptr || replicas[r]->size() != replicas[0]->size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("BroadcastMasterParams: replica ", r,
                       " does not have as many parameters as replica 0"));
    }
  }
  for (size_t p = 0; p < replicas[0]->size(); ++p) {
    std::vector<BufferPtr> buffers;
    for (size_t r = 0; r < replicas.size(); ++r) {
      PODSCOPE_ASSIGN_OR_RETURN(BufferPtr b, BufferOf((*replicas[r])[p], r));
      buffers.push_back(std::move(b));
    }
    PODSCOPE_ASSIGN_OR_RETURN(auto results,
                              comm.Broadcast(buffers, /*root=*/0));
    for (size_t r = 0; r < replicas.size(); ++r) {
      Tensor& t = (*replicas[r])[p];
      t = t.context()->FromBuffer(results[r]);
    }
  }
  return absl::OkStatus();
}

}  // namespace podscope::runtime
