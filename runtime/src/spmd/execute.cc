// SpmdProgram (partition: plan + one program per device) and SpmdExecutor:
// runs each device's segments on its stream and performs the inserted
// collectives on the host, across processes with the Communicator.

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/reduce.h"
#include "pjrt/buffer_access.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/pjrt/executable.h"
#include "podscope/runtime/spmd.h"
#include "spmd/plan.h"

namespace podscope::runtime {

using spmd::State;

// A step's collectives move the same shapes every step; fresh host memory
// for them would cost a page fault per page each time, and zeroing it the
// main thread's time while the devices wait. Literals come back here when
// their step is done with them. Bounded: what is beyond the bounds is
// freed.
class SpmdExecutor::HostPool {
 public:
  // A literal of `shape` with stale contents: the caller overwrites all of
  // it.
  Literal Take(const Shape& shape) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(shape.ToString());
      if (it != free_.end() && !it->second.empty()) {
        Literal literal = std::move(it->second.back());
        it->second.pop_back();
        bytes_ -= literal.size_bytes();
        return literal;
      }
    }
    return Literal(shape);
  }

  // `literal` kept for a later Take (a moved-from one is dropped).
  void Put(Literal literal) {
    if (literal.untyped_data() == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Literal>& same = free_[literal.shape().ToString()];
    if (same.size() >= kMaxPerShape ||
        bytes_ + literal.size_bytes() > kMaxBytes) {
      return;
    }
    bytes_ += literal.size_bytes();
    same.push_back(std::move(literal));
  }

 private:
  static constexpr size_t kMaxPerShape = 16;
  static constexpr int64_t kMaxBytes = int64_t{256} << 20;
  std::mutex mu_;
  std::map<std::string, std::vector<Literal>> free_;  // guarded by mu_
  int64_t bytes_ = 0;                                 // guarded by mu_
};

SpmdProgram::~SpmdProgram() = default;

absl::StatusOr<std::shared_ptr<const SpmdProgram>> SpmdProgram::Partition(
    const Graph& graph, std::shared_ptr<const Mesh> mesh,
    std::vector<std::optional<Sharding>> parameter_shardings,
    std::map<int, Sharding> annotations,
    std::vector<std::string> parameter_names) {
  if (mesh == nullptr) return absl::InvalidArgumentError("spmd: no mesh");
  const int num_params = static_cast<int>(graph.parameters().size());
  if (static_cast<int>(parameter_shardings.size()) > num_params) {
    return absl::InvalidArgumentError(
        absl::StrCat("spmd: ", parameter_shardings.size(),
                     " parameter shardings for ", num_params, " parameters"));
  }
  parameter_shardings.resize(num_params);
  std::shared_ptr<SpmdProgram> program(new SpmdProgram());
  program->graph_ = graph;
  program->mesh_ = mesh;
  program->names_ = std::move(parameter_names);
  program->names_.resize(num_params);
  std::vector<State> params;
  for (int i = 0; i < num_params; ++i) {
    const Shape& shape = graph.node(graph.parameters()[i]).shape;
    std::optional<Sharding>& s = parameter_shardings[i];
    if (!s) s = Sharding::Replicated(mesh, shape.rank());
    const std::string name = program->names_[i].empty()
                                 ? absl::StrCat("parameter ", i)
                                 : program->names_[i];
    if (s->rank() != shape.rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spmd: ", name, " has shape ", shape.ToString(), " but its sharding ",
          s->SpecString(), " has ", s->rank(), " entries"));
    }
    if (!(*s->mesh == *mesh)) {
      absl::StatusOr<Sharding> t = TranslateSharding(*s, mesh);
      if (!t.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("spmd: ", name, " is sharded over another mesh (",
                         s->mesh->ToString(), "): ", t.status().message()));
      }
      s = *std::move(t);
    }
    params.push_back(spmd::FromSharding(*s));
    program->params_.push_back(*s);
  }
  std::map<int, State> states;
  for (const auto& [id, s] : annotations) {
    if (id < 0 || id >= static_cast<int>(graph.nodes().size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("spmd: annotation of a node %", id, " that is not in ",
                       graph.name()));
    }
    PODSCOPE_ASSIGN_OR_RETURN(Sharding t, TranslateSharding(s, mesh));
    states[id] = spmd::FromSharding(t);
  }
  PODSCOPE_ASSIGN_OR_RETURN(spmd::Plan plan,
                            spmd::Propagate(graph, *mesh, params, states));
  for (int p = 0; p < mesh->num_devices(); ++p) {
    PODSCOPE_ASSIGN_OR_RETURN(
        spmd::DeviceProgram dp,
        spmd::BuildDeviceProgram(graph, plan, mesh, p, program->names_,
                                 p == 0 ? &program->collectives_ : nullptr));
    program->programs_.push_back(
        std::make_unique<spmd::DeviceProgram>(std::move(dp)));
  }
  for (int id : graph.outputs()) {
    State s = plan.final_state(id);
    s.partial.clear();
    program->outputs_.push_back(spmd::ToSharding(s, mesh));
  }
  std::string listing;
  for (size_t id = 0; id < graph.nodes().size(); ++id) {
    absl::StrAppend(&listing, "%", id, " ", OpName(graph.node(id).op), " ",
                    graph.node(id).shape.ToString(), " ",
                    spmd::StateString(plan.final_state(id), mesh), "\n");
  }
  program->listing_ = std::move(listing);
  // The trace's file metadata: the mesh and every named parameter's spec.
  profiler::SetMetadataAttribute("spmd.mesh", mesh->ToString());
  for (int i = 0; i < num_params; ++i) {
    if (program->names_[i].empty()) continue;
    profiler::SetMetadataAttribute(
        absl::StrCat("spmd.sharding.", program->names_[i]),
        program->params_[i].SpecString());
  }
  return std::shared_ptr<const SpmdProgram>(std::move(program));
}

std::string SpmdProgram::ToString() const { return listing_; }

const spmd::DeviceProgram& SpmdProgram::device_program(int position) const {
  return *programs_[position];
}

absl::StatusOr<std::unique_ptr<SpmdExecutor>> SpmdExecutor::Create(
    Client* client, std::shared_ptr<const Mesh> mesh,
    Communicator* communicator) {
  if (client == nullptr || mesh == nullptr) {
    return absl::InvalidArgumentError(
        "SpmdExecutor: needs a client and a mesh");
  }
  std::unique_ptr<SpmdExecutor> e(new SpmdExecutor());
  e->client_ = client;
  e->mesh_ = mesh;
  e->communicator_ = communicator;
  e->host_pool_ = std::make_shared<HostPool>();
  std::vector<int> local_per_process(client->process_count(), 0);
  for (int id : mesh->device_ids()) {
    absl::StatusOr<Device*> d = client->LookupDevice(id);
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("SpmdExecutor: mesh device ", id,
                       " does not exist: ", d.status().message()));
    }
    e->devices_.push_back((*d)->addressable() ? *d : nullptr);
    e->process_of_.push_back((*d)->process_index());
    ++local_per_process[(*d)->process_index()];
    if (!(*d)->addressable() && communicator == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("SpmdExecutor: mesh device ", id, " belongs to process ",
                       (*d)->process_index(),
                       "; a multi-process mesh needs a communicator"));
    }
  }
  for (int n : local_per_process) {
    if (n != local_per_process[0]) {
      return absl::InvalidArgumentError(
          "SpmdExecutor: every process must hold as many mesh devices");
    }
  }
  return e;
}

namespace {

// Every mesh position's shard: the local ones given (`local`, by
// position, null where not local), the others received from their
// processes (one all-gather of each process's local bytes) into `recv`,
// which the result points into.
absl::StatusOr<std::vector<const void*>> ExchangeAll(
    Communicator* comm, const std::vector<Device*>& devices,
    const std::vector<int>& process_of, std::vector<const void*> local,
    const Shape& shard_shape, int64_t* bytes, std::vector<char>& recv) {
  if (comm == nullptr) return local;
  const int64_t shard_bytes = shard_shape.byte_size();
  std::vector<char> send;
  for (size_t p = 0; p < devices.size(); ++p) {
    if (devices[p] == nullptr) continue;
    const char* data = static_cast<const char*>(local[p]);
    send.insert(send.end(), data, data + shard_bytes);
  }
  recv.resize(send.size() * comm->world_size());
  if (!send.empty()) {
    PODSCOPE_RETURN_IF_ERROR(comm->AllGather(ElementType::kPred, send.data(),
                                             static_cast<int64_t>(send.size()),
                                             recv.data()));
  }
  *bytes += static_cast<int64_t>(recv.size() - send.size());
  std::vector<int64_t> offset(comm->world_size(), 0);
  for (int r = 0; r < comm->world_size(); ++r) {
    offset[r] = static_cast<int64_t>(r) * static_cast<int64_t>(send.size());
  }
  std::vector<const void*> all(devices.size());
  for (size_t p = 0; p < devices.size(); ++p) {
    const int r = process_of[p];
    all[p] = devices[p] != nullptr ? local[p] : recv.data() + offset[r];
    offset[r] += shard_bytes;
  }
  return all;
}

// The positions whose tiles of `from` make up the value `position` sees:
// those that differ from it only in the axes `from` tiles or holds
// partial results over.
std::vector<int> GroupOf(const Mesh& mesh, const State& from, int position) {
  const std::vector<int64_t> me = mesh.Coordinates(position);
  std::vector<bool> varies(mesh.rank(), false);
  for (int a : spmd::UsedAxes(from)) varies[a] = true;
  std::vector<int> group;
  for (int q = 0; q < mesh.num_devices(); ++q) {
    const std::vector<int64_t> c = mesh.Coordinates(q);
    bool same_group = true;
    for (int a = 0; a < mesh.rank(); ++a) {
      if (!varies[a] && c[a] != me[a]) same_group = false;
    }
    if (same_group) group.push_back(q);
  }
  return group;
}

// The global value of a group: partial tiles are combined over their
// reduction group (in position order, so every device gets bitwise the
// same), tiles are assembled. `tiles` (by position, arrays of the shard
// shape) are only read: the sums go into literals of `pool`.
template <typename Pool>
absl::StatusOr<Literal> Assemble(const std::shared_ptr<const Mesh>& mesh_ptr,
                                 const std::vector<const void*>& tiles,
                                 const State& from, const Shape& global,
                                 const std::vector<int>& group, Pool& pool) {
  const Sharding fs = spmd::ToSharding(from, mesh_ptr);
  const Shape shard_shape = fs.ShardShape(global);
  const size_t count = static_cast<size_t>(shard_shape.num_elements());
  internal::ReduceFn reduce = nullptr;
  // Per tile index: the first position holding it, and the sum of its
  // partial tiles once there is more than one (written in the pass that
  // reads the first two, so no tile is copied just to be added to).
  std::map<std::vector<int64_t>, int> representative;
  std::map<std::vector<int64_t>, Literal> sums;
  for (int q : group) {
    std::vector<int64_t> tile;
    for (int d = 0; d < fs.rank(); ++d) tile.push_back(fs.TileIndex(d, q));
    auto first = representative.find(tile);
    if (first == representative.end()) {
      representative.emplace(tile, q);
      continue;
    }
    if (reduce == nullptr) {
      PODSCOPE_ASSIGN_OR_RETURN(
          reduce, internal::ReduceFunction(
                      global.element_type(),
                      from.partial_max ? ReduceOp::kMax : ReduceOp::kSum));
    }
    auto sum = sums.find(tile);
    if (sum == sums.end()) {
      Literal acc = pool.Take(shard_shape);
      reduce(acc.untyped_data(), tiles[first->second], tiles[q], count);
      sums.emplace(tile, std::move(acc));
    } else {
      reduce(sum->second.untyped_data(), sum->second.untyped_data(), tiles[q],
             count);
    }
  }
  // One tile that is the whole value (partial results, or a replicated
  // source): nothing to place.
  if (representative.size() == 1 && shard_shape == global) {
    if (!sums.empty()) return std::move(sums.begin()->second);
    Literal whole = pool.Take(global);
    if (whole.size_bytes() > 0) {
      std::memcpy(whole.untyped_data(), tiles[representative.begin()->second],
                  whole.size_bytes());
    }
    return whole;
  }
  // The group's tiles cover every index of the value: all of it is
  // written.
  Literal full = pool.Take(global);
  for (const auto& [tile, q] : representative) {
    auto sum = sums.find(tile);
    spmd::InsertShardFrom(
        sum != sums.end() ? sum->second.untyped_data() : tiles[q], shard_shape,
        fs, q, full);
  }
  for (auto& [tile, literal] : sums) pool.Put(std::move(literal));
  return full;
}

}  // namespace

absl::StatusOr<ShardedValue> SpmdExecutor::Shard(const Literal& global,
                                                 const Sharding& sharding) {
  if (sharding.rank() != global.shape().rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SpmdExecutor::Shard: sharding ", sharding.SpecString(),
                     " for ", global.shape().ToString()));
  }
  ShardedValue value;
  value.global_shape = global.shape();
  value.sharding = sharding;
  value.shards.resize(devices_.size());
  for (size_t p = 0; p < devices_.size(); ++p) {
    if (devices_[p] == nullptr) continue;
    PODSCOPE_ASSIGN_OR_RETURN(
        BufferPtr b,
        client_->BufferFromLiteral(
            ExtractShard(global, sharding, static_cast<int>(p)), devices_[p]));
    value.shards[p] = std::move(b);
  }
  return value;
}

absl::StatusOr<Literal> SpmdExecutor::Gather(const ShardedValue& value) {
  const Shape shard_shape = value.sharding.ShardShape(value.global_shape);
  std::vector<Literal> local(devices_.size());
  for (size_t p = 0; p < devices_.size(); ++p) {
    if (devices_[p] == nullptr) continue;
    if (value.shards[p] == nullptr) {
      return absl::InvalidArgumentError("SpmdExecutor::Gather: missing shard");
    }
    PODSCOPE_ASSIGN_OR_RETURN(local[p], value.shards[p]->ToLiteral().Await());
  }
  std::vector<const void*> views(devices_.size(), nullptr);
  for (size_t p = 0; p < devices_.size(); ++p) {
    if (devices_[p] != nullptr) views[p] = local[p].untyped_data();
  }
  std::vector<char> recv;
  PODSCOPE_ASSIGN_OR_RETURN(
      std::vector<const void*> all,
      ExchangeAll(communicator_, devices_, process_of_, std::move(views),
                  shard_shape, &collective_bytes_, recv));
  Literal full(value.global_shape);
  for (size_t p = 0; p < devices_.size(); ++p) {
    spmd::InsertShardFrom(all[p], shard_shape, value.sharding,
                          static_cast<int>(p), full);
  }
  return full;
}

absl::StatusOr<std::vector<ShardedValue>> SpmdExecutor::Execute(
    const SpmdProgram& program, absl::Span<const ShardedValue> arguments) {
  if (!(*program.mesh() == *mesh_)) {
    return absl::InvalidArgumentError(
        "SpmdExecutor::Execute: the program is partitioned for another mesh");
  }
  const spmd::DeviceProgram& first = program.device_program(0);
  if (arguments.size() != first.parameter_slots.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SpmdExecutor::Execute: ", arguments.size(), " arguments for ",
        first.parameter_slots.size(), " parameters"));
  }
  Slots slots(devices_.size(), std::vector<BufferPtr>(first.num_slots));
  PODSCOPE_RETURN_IF_ERROR(BindArguments(program, arguments, slots));
  for (size_t k = 0; k < first.steps.size(); ++k) {
    if (first.steps[k].collective) {
      PODSCOPE_RETURN_IF_ERROR(RunCollective(program, k, slots));
    } else {
      PODSCOPE_RETURN_IF_ERROR(RunSegments(program, k, slots));
    }
  }
  return Outputs(program, slots);
}

absl::Status SpmdExecutor::BindArguments(
    const SpmdProgram& program, absl::Span<const ShardedValue> arguments,
    Slots& slots) {
  const spmd::DeviceProgram& first = program.device_program(0);
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Sharding& want = program.parameter_sharding(static_cast<int>(i));
    const ShardedValue* arg = &arguments[i];
    ShardedValue resharded;
    if (!(arg->sharding == want)) {
      PODSCOPE_ASSIGN_OR_RETURN(Literal full, Gather(*arg));
      PODSCOPE_ASSIGN_OR_RETURN(resharded, Shard(full, want));
      arg = &resharded;
    }
    for (size_t p = 0; p < devices_.size(); ++p) {
      if (devices_[p] != nullptr) {
        slots[p][first.parameter_slots[i]] = arg->shards[p];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SpmdExecutor::RunSegments(const SpmdProgram& program, size_t k,
                                       Slots& slots) {
  for (size_t p = 0; p < devices_.size(); ++p) {
    if (devices_[p] == nullptr) continue;
    const spmd::Step& step =
        program.device_program(static_cast<int>(p)).steps[k];
    const spmd::Segment& seg = step.segment;
    PODSCOPE_TRACE("spmd_shard", "device", devices_[p]->id(), "mesh_position",
                   static_cast<int>(p), "program", seg.graph.name(),
                   "shard_shape", seg.shard_shapes);
    PODSCOPE_ASSIGN_OR_RETURN(std::shared_ptr<Executable> exe,
                              client_->Compile(seg.graph));
    std::vector<BufferPtr> args;
    for (int slot : seg.inputs) args.push_back(slots[p][slot]);
    PODSCOPE_ASSIGN_OR_RETURN(std::vector<BufferPtr> out,
                              exe->Execute(args, devices_[p]));
    for (size_t j = 0; j < seg.outputs.size(); ++j) {
      slots[p][seg.outputs[j]] = out[j];
    }
  }
  return absl::OkStatus();
}

absl::Status SpmdExecutor::RunCollective(const SpmdProgram& program, size_t k,
                                         Slots& slots) {
  const int n = static_cast<int>(devices_.size());
  const spmd::CollectiveStep& c = program.device_program(0).steps[k].exchange;
  const InsertedCollective& info = program.collectives()[c.index];
  PODSCOPE_TRACE("spmd_collective", "kind", info.kind, "reason", info.reason,
                 "bytes", info.bytes, "min_bytes", info.min_bytes, "group_size",
                 info.group_size);
  const Shape shard_shape =
      spmd::ToSharding(c.from, mesh_).ShardShape(c.global);
  // The local shards are read where they lie: a device's memory is host
  // memory (as for the device collectives), so once a shard is ready it is
  // summed or placed from there, not first copied to a host literal. The
  // slots keep the buffers alive until the exchange is done.
  std::vector<const void*> local(n, nullptr);
  for (int p = 0; p < n; ++p) {
    if (devices_[p] == nullptr) continue;
    const BufferPtr& shard = slots[p][c.input];
    PODSCOPE_RETURN_IF_ERROR(shard->ready().Await());
    if (shard->shape() != shard_shape) {
      return absl::InternalError(
          absl::StrCat("spmd exchange: shard ", shard->shape().ToString(),
                       " is not ", shard_shape.ToString()));
    }
    local[p] = internal::BufferAccess::Data(*shard);
  }
  std::vector<char> recv;
  PODSCOPE_ASSIGN_OR_RETURN(
      std::vector<const void*> all,
      ExchangeAll(communicator_, devices_, process_of_, std::move(local),
                  shard_shape, &collective_bytes_, recv));
  // Devices of one group see the same global value: assembled once, and
  // when their shard is all of it, shared by their transfers.
  std::map<std::vector<int>, std::shared_ptr<const Literal>> assembled;
  const Sharding to = spmd::ToSharding(c.to, mesh_);
  const bool whole = to.ShardShape(c.global) == c.global;
  for (int p = 0; p < n; ++p) {
    if (devices_[p] == nullptr) continue;
    const std::vector<int> group = GroupOf(*mesh_, c.from, p);
    auto it = assembled.find(group);
    if (it == assembled.end()) {
      PODSCOPE_ASSIGN_OR_RETURN(
          Literal value,
          Assemble(mesh_, all, c.from, c.global, group, *host_pool_));
      it = assembled.emplace(group, Pooled(std::move(value))).first;
    }
    if (whole) {
      PODSCOPE_ASSIGN_OR_RETURN(slots[p][c.output],
                                SharedToDevice(it->second, devices_[p]));
    } else {
      // The tile goes into a kept literal too: a fresh one every step
      // cost its zeroing and a page fault per page.
      Literal tile = host_pool_->Take(to.ShardShape(c.global));
      spmd::ExtractShardInto(*it->second, to, p, tile);
      PODSCOPE_ASSIGN_OR_RETURN(
          slots[p][c.output],
          SharedToDevice(Pooled(std::move(tile)), devices_[p]));
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<const Literal> SpmdExecutor::Pooled(Literal literal) const {
  // Back to the pool once every transfer that reads it has run.
  return std::shared_ptr<const Literal>(new Literal(std::move(literal)),
                                        [pool = host_pool_](Literal* done) {
                                          pool->Put(std::move(*done));
                                          delete done;
                                        });
}

absl::StatusOr<BufferPtr> SpmdExecutor::SharedToDevice(
    const std::shared_ptr<const Literal>& value, Device* device) {
  PODSCOPE_ASSIGN_OR_RETURN(
      BufferPtr buffer,
      client_->BufferFromHost(
          value->untyped_data(), value->shape(), device,
          HostBufferSemantics::kImmutableUntilTransferCompletes));
  // The value lives until every transfer that reads it has run.
  buffer->ready().OnReady([value](const absl::Status&) {});
  return buffer;
}

std::vector<ShardedValue> SpmdExecutor::Outputs(const SpmdProgram& program,
                                                const Slots& slots) const {
  std::vector<ShardedValue> results;
  const int n = static_cast<int>(devices_.size());
  const spmd::DeviceProgram& first = program.device_program(0);
  for (size_t i = 0; i < first.output_slots.size(); ++i) {
    ShardedValue v;
    v.global_shape = program.graph().node(program.graph().outputs()[i]).shape;
    v.sharding = program.output_sharding(static_cast<int>(i));
    v.shards.resize(n);
    for (int p = 0; p < n; ++p) {
      if (devices_[p] == nullptr) continue;
      v.shards[p] = slots[p][program.device_program(p).output_slots[i]];
    }
    results.push_back(std::move(v));
  }
  return results;
}

}  // namespace podscope::runtime
