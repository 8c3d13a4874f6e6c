// LazyContext in SPMD mode: one context for every device of a mesh
// (lazy_spmd.h).

#include "lazy/lazy_spmd.h"

#include "absl/strings/str_cat.h"
#include "instrumentation.h"
#include "lazy/lazy_internal.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/lazy/lazy.h"

namespace podscope::runtime {
namespace internal {

absl::StatusOr<std::shared_ptr<ShardedValue>> SpmdFromLiteral(
    SpmdLazyState& state, const Literal& literal) {
  PODSCOPE_ASSIGN_OR_RETURN(
      ShardedValue value,
      state.executor->Shard(
          literal, Sharding::Replicated(state.mesh, literal.shape().rank())));
  return std::make_shared<ShardedValue>(std::move(value));
}

absl::StatusOr<std::vector<std::shared_ptr<ShardedValue>>> SpmdRunStep(
    SpmdLazyState& state, const Graph& graph,
    const std::map<int, Sharding>& annotations) {
  // The same graph with the same shardings is partitioned once.
  std::string key = absl::StrCat(graph.fingerprint());
  for (const std::optional<Sharding>& s : state.parameter_shardings) {
    absl::StrAppend(&key, "|", s ? s->SpecString() : "r");
  }
  for (const auto& [node, s] : annotations) {
    absl::StrAppend(&key, "|", node, "=", s.SpecString());
  }
  std::shared_ptr<const SpmdProgram>& program = state.programs[key];
  if (program == nullptr) {
    absl::StatusOr<std::shared_ptr<const SpmdProgram>> partitioned =
        SpmdProgram::Partition(graph, state.mesh, state.parameter_shardings,
                               annotations);
    if (!partitioned.ok()) {
      state.programs.erase(key);
      return partitioned.status();
    }
    program = *std::move(partitioned);
    ++state.partitions;
  }
  state.last = program;
  std::vector<ShardedValue> arguments;
  arguments.reserve(state.parameters.size());
  for (const auto& p : state.parameters) arguments.push_back(*p);
  PODSCOPE_ASSIGN_OR_RETURN(std::vector<ShardedValue> outputs,
                            state.executor->Execute(*program, arguments));
  std::vector<std::shared_ptr<ShardedValue>> out;
  for (ShardedValue& v : outputs) {
    out.push_back(std::make_shared<ShardedValue>(std::move(v)));
  }
  return out;
}

absl::Status SpmdSyncStep(SpmdLazyState& state,
                          const absl::StatusOr<Graph>& graph,
                          const std::vector<std::shared_ptr<TensorImpl>>& live,
                          int64_t step, uint64_t* fingerprint) {
  absl::Status status = graph.status();
  std::vector<std::shared_ptr<ShardedValue>> sharded;
  if (graph.ok()) {
    *fingerprint = graph->fingerprint();
    ScopedLazyStep compiling_step(step);
    // The outputs' MarkSharding annotations.
    std::map<int, Sharding> annotations;
    for (size_t i = 0; i < live.size(); ++i) {
      if (live[i]->sharding != nullptr) {
        annotations.emplace(graph->outputs()[i], *live[i]->sharding);
      }
    }
    auto ran = SpmdRunStep(state, *graph, annotations);
    status = ran.status();
    if (ran.ok()) sharded = *std::move(ran);
  }
  for (size_t i = 0; i < live.size(); ++i) {
    if (status.ok()) {
      live[i]->sharded = sharded[i];
    } else {
      live[i]->status = status;
    }
    live[i]->generation = -1;
  }
  return status;
}

}  // namespace internal

absl::StatusOr<std::shared_ptr<LazyContext>> LazyContext::CreateSpmd(
    Client* client, std::shared_ptr<const Mesh> mesh,
    Communicator* communicator) {
  if (client == nullptr || mesh == nullptr) {
    return absl::InvalidArgumentError(
        "LazyContext::CreateSpmd: needs a client and a mesh");
  }
  if (!SpmdEnabled()) {
    return absl::FailedPreconditionError(
        "LazyContext::CreateSpmd: SPMD is not enabled (call UseSpmd() "
        "first)");
  }
  // The first of the mesh's devices that this process holds.
  Device* first = nullptr;
  for (int id : mesh->device_ids()) {
    for (Device* d : client->addressable_devices()) {
      if (d->id() == id) {
        first = d;
        break;
      }
    }
    if (first != nullptr) break;
  }
  if (first == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("LazyContext::CreateSpmd: no device of the mesh ",
                     mesh->ToString(), " is addressable by this process"));
  }
  PODSCOPE_ASSIGN_OR_RETURN(auto executor,
                            SpmdExecutor::Create(client, mesh, communicator));
  std::shared_ptr<LazyContext> context(new LazyContext(client, first));
  context->spmd_ = std::make_unique<internal::SpmdLazyState>();
  context->spmd_->mesh = std::move(mesh);
  context->spmd_->executor = std::move(executor);
  return context;
}

int64_t LazyContext::spmd_partitions() const {
  return spmd_ == nullptr ? 0 : spmd_->partitions;
}

std::shared_ptr<const SpmdProgram> LazyContext::last_spmd_program() const {
  return spmd_ == nullptr ? nullptr : spmd_->last;
}

const Mesh* LazyContext::mesh() const {
  return spmd_ == nullptr ? nullptr : spmd_->mesh.get();
}

}  // namespace podscope::runtime
