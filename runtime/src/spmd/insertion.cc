// Collective insertion and per-device program building: walks the plan,
// reshards operands where shardings meet (a local slice when the device
// already holds the data, else a collective that ends the current compute
// segment), and records each op over the device's local shards.

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/ir/builder.h"
#include "spmd/plan.h"

namespace podscope::runtime::spmd {

State FromSharding(const Sharding& sharding) {
  State s;
  s.dims = sharding.dim_axes;
  return s;
}

Sharding ToSharding(const State& state, std::shared_ptr<const Mesh> mesh) {
  Sharding s;
  s.mesh = std::move(mesh);
  s.dim_axes = state.dims;
  return s;
}

std::string StateString(const State& state,
                        const std::shared_ptr<const Mesh>& mesh) {
  const Sharding s = ToSharding(state, mesh);
  std::string out = s.IsReplicated() ? "replicated" : s.SpecString();
  if (state.has_partial()) {
    std::vector<std::string> names;
    for (int a : state.partial) {
      names.push_back(absl::StrCat("'", mesh->axis_names()[a], "'"));
    }
    absl::StrAppend(&out, state.partial_max ? " partial-max(" : " partial(",
                    absl::StrJoin(names, ","), ")");
  }
  return out;
}

std::vector<int> UsedAxes(const State& state) {
  std::vector<int> axes = state.partial;
  for (const auto& d : state.dims) axes.insert(axes.end(), d.begin(), d.end());
  std::sort(axes.begin(), axes.end());
  return axes;
}

namespace {

int64_t Product(const std::vector<int>& axes, const Mesh& mesh) {
  int64_t n = 1;
  for (int a : axes) n *= mesh.shape()[a];
  return n;
}

class Builder {
 public:
  Builder(const Graph& graph, const Plan& plan,
          const std::shared_ptr<const Mesh>& mesh, int position,
          const std::vector<std::string>& names,
          std::vector<InsertedCollective>* collectives)
      : graph_(graph),
        plan_(plan),
        mesh_(mesh),
        position_(position),
        names_(names),
        collectives_(collectives) {}

  absl::StatusOr<DeviceProgram> Build();

 private:
  struct Slot {
    State state;
    Shape global;
    int segment = -1;  // producing segment, -1: bound from outside
    // Made by a broadcast of `broadcast_operand` (a slot) over these
    // operand-to-output dimensions; -1 otherwise.
    int broadcast_operand = -1;
    std::vector<int64_t> broadcast_dims;
    // Made by a transpose of `transpose_operand` (a slot) with this
    // permutation; -1 otherwise.
    int transpose_operand = -1;
    std::vector<int64_t> transpose_perm;
  };
  // A collective's result: `slot` as `to`, in slot `out`.
  struct Resharded {
    int slot;
    State to;
    int out;
  };
  struct Open {
    std::unique_ptr<GraphBuilder> builder;
    std::vector<std::pair<int, Value>> values;  // slot -> value here
    std::vector<int> inputs;
  };

  Shape Local(int slot) const {
    return ToSharding(slots_[slot].state, mesh_)
        .ShardShape(slots_[slot].global);
  }
  int NewSlot(State state, Shape global, int segment) {
    slots_.push_back({std::move(state), std::move(global), segment});
    return static_cast<int>(slots_.size()) - 1;
  }
  GraphBuilder& b() { return *open_.builder; }
  Value Get(int slot);
  void Export(int slot);
  void Inherit(int slot, int from);
  int Define(Value v, State state, Shape global);
  void CloseSegment();
  absl::StatusOr<int> Reshard(int slot, const State& to,
                              const std::string& why);
  // Reshard's two ways: slicing the tile the device already holds, or a
  // collective step between two segments.
  absl::StatusOr<int> SliceLocally(int slot, const State& to);
  int InsertCollective(int slot, const State& to, const std::string& why);
  // The slot an earlier collective made of `slot` as `to`, or -1.
  int FindResharded(int slot, const State& to) const;
  // A transpose whose operand an earlier collective already made into
  // the transposed `to`: that result transposed here, or -1.
  absl::StatusOr<int> TransposeResharded(int slot, const State& to);
  // Whether the `to` tile of a broadcast's slot is the same broadcast of
  // its operand, to the tile's shape.
  bool CanRebroadcast(int slot, const State& to) const;
  InsertedCollective Describe(int slot, const State& from, const State& to,
                              const std::string& why) const;
  // Bytes of its `to` tile that a device's `from` tile lacks (the most
  // over the devices).
  int64_t MissingBytes(const State& from, const State& to,
                       const Shape& global) const;
  Value Mask(Value v, int slot, const std::vector<int>& dims, float fill);
  // Build's steps: a node's value on this device (its slot), the outputs'
  // slots, and the closed segments interleaved with the collectives.
  absl::StatusOr<int> PlaceNode(int id, DeviceProgram& program);
  absl::StatusOr<int> EmitNode(int id);
  absl::Status PlaceOutputs(DeviceProgram& program);
  absl::Status AssembleSteps(DeviceProgram& program);
  void NameSlot(int slot, int id) {
    if (static_cast<int>(slot_name_.size()) <= slot) {
      slot_name_.resize(slot + 1, -1);
    }
    if (slot_name_[slot] < 0) slot_name_[slot] = id;
  }
  absl::StatusOr<Value> EmitOp(const Node& node, std::vector<Value> operands,
                               const Shape& local_out, const NodePlan& np,
                               const std::vector<int>& operand_slots);
  std::string NameOf(int id) const {
    const Node& n = graph_.node(id);
    if (n.op == OpKind::kParameter && n.attrs.parameter_index >= 0 &&
        n.attrs.parameter_index < static_cast<int64_t>(names_.size()) &&
        !names_[n.attrs.parameter_index].empty()) {
      return names_[n.attrs.parameter_index];
    }
    return absl::StrCat(
        "%", id, " ", OpName(n.op),
        n.scope.empty() ? "" : absl::StrCat(" (", n.scope, ")"));
  }

  const Graph& graph_;
  const Plan& plan_;
  std::shared_ptr<const Mesh> mesh_;
  int position_;
  const std::vector<std::string>& names_;
  std::vector<InsertedCollective>* collectives_;
  int num_collectives_ = 0;

  std::vector<Slot> slots_;
  std::vector<int> slot_of_node_;
  std::vector<int> slot_name_;  // node id a slot came from
  Open open_;
  std::vector<Open> closed_;
  std::vector<std::vector<int>> exports_;  // per segment: slots to output
  std::vector<Step> steps_;  // collectives, with segments as placeholders
  std::vector<Resharded> resharded_;
};

Value Builder::Get(int slot) {
  for (const auto& [s, v] : open_.values) {
    if (s == slot) return v;
  }
  Value p = b().Parameter(Local(slot));
  open_.values.emplace_back(slot, p);
  open_.inputs.push_back(slot);
  Export(slot);
  return p;
}

void Builder::Export(int slot) {
  const int seg = slots_[slot].segment;
  if (seg < 0) return;
  if (static_cast<int>(exports_.size()) <= seg) exports_.resize(seg + 1);
  auto& e = exports_[seg];
  if (std::find(e.begin(), e.end(), slot) == e.end()) e.push_back(slot);
}

void Builder::Inherit(int slot, int from) {
  if (static_cast<int>(slot_name_.size()) <= slot) {
    slot_name_.resize(slot + 1, -1);
  }
  if (from < static_cast<int>(slot_name_.size())) {
    slot_name_[slot] = slot_name_[from];
  }
}

int Builder::Define(Value v, State state, Shape global) {
  const int seg = static_cast<int>(closed_.size());
  const int slot = NewSlot(std::move(state), std::move(global), seg);
  open_.values.emplace_back(slot, v);
  return slot;
}

void Builder::CloseSegment() {
  closed_.push_back(std::move(open_));
  open_ = Open();
  open_.builder = std::make_unique<GraphBuilder>(
      absl::StrCat(graph_.name(), ".spmd", position_, ".", closed_.size()));
  Step step;
  steps_.push_back(std::move(step));
}

absl::StatusOr<int> Builder::Reshard(int slot, const State& to,
                                     const std::string& why) {
  const State& from = slots_[slot].state;
  if (from == to) return slot;
  bool local = !from.has_partial() && !to.has_partial();
  for (size_t d = 0; local && d < from.dims.size(); ++d) {
    if (!from.dims[d].empty() && from.dims[d] != to.dims[d]) local = false;
  }
  if (local) return SliceLocally(slot, to);
  // A value needed the same way twice (a weight by the forward op and by
  // its gradient) is moved once: collective results are slots every later
  // segment can read.
  if (const int done = FindResharded(slot, to); done >= 0) return done;
  PODSCOPE_ASSIGN_OR_RETURN(const int transposed, TransposeResharded(slot, to));
  if (transposed >= 0) return transposed;
  return InsertCollective(slot, to, why);
}

int Builder::FindResharded(int slot, const State& to) const {
  for (const Resharded& r : resharded_) {
    if (r.slot == slot && r.to == to) return r.out;
  }
  return -1;
}

absl::StatusOr<int> Builder::TransposeResharded(int slot, const State& to) {
  // The gradient of a dot reads its weight transposed: gathering the
  // transpose again would move what the forward op's gather already
  // brought; transposing that copy on the device moves nothing.
  const Slot& s = slots_[slot];
  if (s.transpose_operand < 0 || to.has_partial() || s.state.has_partial()) {
    return -1;
  }
  const int operand = s.transpose_operand;
  const std::vector<int64_t> perm = s.transpose_perm;
  const Shape global = s.global;
  State operand_to = slots_[operand].state;
  operand_to.partial.clear();
  for (size_t d = 0; d < perm.size(); ++d) {
    operand_to.dims[perm[d]] = to.dims[d];
  }
  const int done = FindResharded(operand, operand_to);
  if (done < 0) return -1;
  const Value v = b().Transpose(Get(done), perm);
  if (!v.valid()) return b().TakeStatus();
  const int out = Define(v, to, global);
  Inherit(out, slot);
  return out;
}

absl::StatusOr<int> Builder::SliceLocally(int slot, const State& to) {
  // The device holds everything it needs: slice its tile (zero padding).
  const State from = slots_[slot].state;  // slots_ grows below
  const Shape global = slots_[slot].global;
  const Sharding target = ToSharding(to, mesh_);
  const Shape out_local = target.ShardShape(global);
  const std::vector<int64_t> start = target.TileStart(global, position_);
  const Shape in_local = Local(slot);
  std::vector<int64_t> starts(global.rank(), 0);
  std::vector<int64_t> limits = in_local.dims();
  std::vector<int64_t> low(global.rank(), 0);
  std::vector<int64_t> high(global.rank(), 0);
  bool empty = false;
  for (int d = 0; d < global.rank(); ++d) {
    if (!from.dims[d].empty() || to.dims[d].empty()) continue;
    const int64_t len = std::min(out_local.dim(d), global.dim(d) - start[d]);
    if (len <= 0) empty = true;
    starts[d] = start[d];
    limits[d] = start[d] + std::max<int64_t>(len, 0);
    high[d] = out_local.dim(d) - std::max<int64_t>(len, 0);
  }
  Value v;
  if (CanRebroadcast(slot, to)) {
    const int operand = slots_[slot].broadcast_operand;
    const std::vector<int64_t> bdims = slots_[slot].broadcast_dims;
    Get(slot);  // keeps the segments alike on every device
    v = b().Broadcast(Get(operand), out_local.dims(), bdims);
  } else if (empty) {
    Get(slot);  // keeps the segments alike on every device
    v = b().Constant(Literal(out_local));
  } else {
    v = b().Slice(Get(slot), starts, limits);
    bool pad = false;
    for (int64_t h : high) pad |= h > 0;
    if (pad) v = b().Pad(v, low, high);
  }
  if (!v.valid()) return b().TakeStatus();
  const int sliced = Define(v, to, global);
  Inherit(sliced, slot);
  return sliced;
}

bool Builder::CanRebroadcast(int slot, const State& to) const {
  // A tile of a broadcast along its new dimensions is the same broadcast
  // to the tile's shape: no full-size intermediate.
  const Slot& s = slots_[slot];
  if (s.broadcast_operand < 0) return false;
  const Slot& src = slots_[s.broadcast_operand];
  const Shape& global = s.global;
  std::vector<bool> mapped(global.rank(), false);
  for (size_t i = 0; i < s.broadcast_dims.size(); ++i) {
    const int od = static_cast<int>(s.broadcast_dims[i]);
    if (src.global.dim(static_cast<int>(i)) == global.dim(od)) {
      mapped[od] = true;
    }
  }
  for (int d = 0; d < global.rank(); ++d) {
    if (s.state.dims[d].empty() && !to.dims[d].empty() && mapped[d]) {
      return false;
    }
  }
  return true;
}

int Builder::InsertCollective(int slot, const State& to,
                              const std::string& why) {
  // A collective: the value leaves this segment.
  const State from = slots_[slot].state;  // slots_ grows below
  const Shape global = slots_[slot].global;
  Export(slot);
  CloseSegment();
  const int out = NewSlot(to, global, -1);
  Inherit(out, slot);
  CollectiveStep c;
  c.input = slot;
  c.output = out;
  c.from = from;
  c.to = to;
  c.global = global;
  c.index = num_collectives_++;
  steps_.back().collective = true;
  steps_.back().exchange = c;
  if (collectives_ != nullptr) {
    collectives_->push_back(Describe(slot, from, to, why));
  }
  resharded_.push_back({slot, to, out});
  return out;
}

InsertedCollective Builder::Describe(int slot, const State& from,
                                     const State& to,
                                     const std::string& why) const {
  const Shape& global = slots_[slot].global;
  InsertedCollective ic;
  std::vector<int> gathered;  // tiled in `from`, not at the same dim in `to`
  for (size_t d = 0; d < from.dims.size(); ++d) {
    if (from.dims[d] != to.dims[d]) {
      gathered.insert(gathered.end(), from.dims[d].begin(), from.dims[d].end());
    }
  }
  const int64_t shard_bytes =
      ToSharding(from, mesh_).ShardShape(global).byte_size();
  const int64_t reduce_group = Product(from.partial, *mesh_);
  bool scatter = false;
  for (int a : from.partial) {
    for (const auto& d : to.dims) {
      if (std::find(d.begin(), d.end(), a) != d.end()) scatter = true;
    }
  }
  const int64_t gather_group = Product(gathered, *mesh_);
  int64_t bytes = 0;
  int64_t min_bytes = 0;
  if (from.has_partial()) {
    const int64_t g = reduce_group;
    ic.kind = scatter ? "reduce_scatter" : "all_reduce";
    // A ring all-reduce moves 2(g-1)/g of the value; a reduce-scatter
    // (g-1)/g, which is also the least a reduction over g devices moves.
    bytes = (scatter ? 1 : 2) * (g - 1) * shard_bytes / g;
    min_bytes = (g - 1) * shard_bytes / g;
    if (!scatter) {
      // Replicated results: a reduce-scatter then an all-gather.
      min_bytes = 2 * (g - 1) * shard_bytes / g;
    }
    ic.group_size = static_cast<int>(g);
  } else {
    ic.kind = "all_gather";
    bytes = (gather_group - 1) * shard_bytes;
    // Only the part of the target tile this device lacks must arrive.
    min_bytes = MissingBytes(from, to, global);
    ic.group_size = static_cast<int>(gather_group);
  }
  ic.bytes = bytes;
  ic.min_bytes = std::min(min_bytes, bytes);
  ic.tensor =
      slot < static_cast<int>(slot_name_.size()) && slot_name_[slot] >= 0
          ? NameOf(slot_name_[slot])
          : absl::StrCat("slot ", slot);
  ic.shape = global;
  ic.from = StateString(from, mesh_);
  ic.to = StateString(to, mesh_);
  ic.reason = absl::StrCat(ic.tensor, ": ", ic.from, " -> ", ic.to, " ", why);
  return ic;
}

int64_t Builder::MissingBytes(const State& from, const State& to,
                              const Shape& global) const {
  const Sharding fs = ToSharding(from, mesh_);
  const Sharding ts = ToSharding(to, mesh_);
  const Shape fl = fs.ShardShape(global);
  const Shape tl = ts.ShardShape(global);
  int64_t most = 0;  // the device that lacks the most sets the pace
  for (int p = 0; p < mesh_->num_devices(); ++p) {
    const std::vector<int64_t> f0 = fs.TileStart(global, p);
    const std::vector<int64_t> t0 = ts.TileStart(global, p);
    int64_t want = 1;
    int64_t have = 1;
    for (int d = 0; d < global.rank(); ++d) {
      const int64_t t1 = std::min(global.dim(d), t0[d] + tl.dim(d));
      const int64_t f1 = std::min(global.dim(d), f0[d] + fl.dim(d));
      want *= std::max<int64_t>(0, t1 - t0[d]);
      have *= std::max<int64_t>(0, std::min(t1, f1) - std::max(t0[d], f0[d]));
    }
    most = std::max(most, want - have);
  }
  return most * ElementSize(global.element_type());
}

Value Builder::Mask(Value v, int slot, const std::vector<int>& dims,
                    float fill) {
  const Slot& s = slots_[slot];
  const Sharding sharding = ToSharding(s.state, mesh_);
  const Shape local = sharding.ShardShape(s.global);
  const std::vector<int64_t> start = sharding.TileStart(s.global, position_);
  std::vector<int64_t> valid = local.dims();
  bool needed = false;
  for (int d : dims) {
    if (d < 0 || s.state.dims[d].empty()) continue;
    valid[d] = std::max<int64_t>(
        0, std::min(local.dim(d), s.global.dim(d) - start[d]));
    needed |= valid[d] < local.dim(d);
  }
  if (!needed) return v;
  Literal mask(PredShape(local.dims()));
  auto data = mask.mutable_data<uint8_t>();
  const std::vector<int64_t> strides = RowMajorStrides(local.dims());
  for (int64_t i = 0; i < static_cast<int64_t>(data.size()); ++i) {
    bool in = true;
    for (int d = 0; d < local.rank() && in; ++d) {
      if ((i / strides[d]) % local.dim(d) >= valid[d]) in = false;
    }
    data[i] = in ? 1 : 0;
  }
  Value m = b().Constant(std::move(mask));
  Value f = b().Full(local, fill);
  return b().Select(m, v, f);
}

absl::StatusOr<DeviceProgram> Builder::Build() {
  open_.builder = std::make_unique<GraphBuilder>(
      absl::StrCat(graph_.name(), ".spmd", position_, ".0"));
  DeviceProgram program;
  slot_of_node_.assign(graph_.nodes().size(), -1);
  for (size_t id = 0; id < graph_.nodes().size(); ++id) {
    PODSCOPE_ASSIGN_OR_RETURN(slot_of_node_[id],
                              PlaceNode(static_cast<int>(id), program));
  }
  PODSCOPE_RETURN_IF_ERROR(PlaceOutputs(program));
  closed_.push_back(std::move(open_));
  exports_.resize(closed_.size());
  PODSCOPE_RETURN_IF_ERROR(AssembleSteps(program));
  program.num_slots = static_cast<int>(slots_.size());
  return program;
}

absl::StatusOr<int> Builder::PlaceNode(int id, DeviceProgram& program) {
  const NodePlan& np = plan_.nodes[id];
  int slot;
  if (np.rule == Rule::kParameter) {
    slot = NewSlot(np.out, graph_.node(id).shape, -1);
    program.parameter_slots.push_back(slot);
  } else {
    PODSCOPE_ASSIGN_OR_RETURN(slot, EmitNode(id));
  }
  NameSlot(slot, id);
  if (np.annotation) {
    PODSCOPE_ASSIGN_OR_RETURN(
        slot, Reshard(slot, *np.annotation, "for MarkSharding"));
    NameSlot(slot, id);
  }
  return slot;
}

absl::StatusOr<int> Builder::EmitNode(int id) {
  const Node& node = graph_.node(id);
  const NodePlan& np = plan_.nodes[id];
  std::vector<int> operand_slots;
  std::vector<Value> operands;
  for (size_t k = 0; k < node.operands.size(); ++k) {
    const int src = slot_of_node_[node.operands[k]];
    PODSCOPE_ASSIGN_OR_RETURN(
        int s,
        Reshard(src, np.operands[k], absl::StrCat("for ", OpName(node.op))));
    operand_slots.push_back(s);
  }
  for (int s : operand_slots) operands.push_back(Get(s));
  const Shape local_out = ToSharding(np.out, mesh_).ShardShape(node.shape);
  absl::StatusOr<Value> v =
      EmitOp(node, std::move(operands), local_out, np, operand_slots);
  if (!v.ok()) {
    return absl::InternalError(absl::StrCat(
        "spmd: device program of mesh position ", position_, ", node %", id,
        " ", OpName(node.op), ": ", v.status().message()));
  }
  const int slot = Define(*v, np.out, node.shape);
  if (node.op == OpKind::kBroadcast) {
    slots_[slot].broadcast_operand = operand_slots[0];
    slots_[slot].broadcast_dims = node.attrs.axes;
  }
  if (node.op == OpKind::kTranspose) {
    slots_[slot].transpose_operand = operand_slots[0];
    slots_[slot].transpose_perm = node.attrs.axes;
  }
  return slot;
}

absl::Status Builder::PlaceOutputs(DeviceProgram& program) {
  // Partial results are reduced.
  for (int id : graph_.outputs()) {
    int slot = slot_of_node_[id];
    if (slots_[slot].state.has_partial()) {
      State whole;
      whole.dims = slots_[slot].state.dims;
      PODSCOPE_ASSIGN_OR_RETURN(slot, Reshard(slot, whole, "for the output"));
    }
    Export(slot);
    program.output_slots.push_back(slot);
  }
  return absl::OkStatus();
}

// The shard work of a segment, for traces: each op with its local shape.
std::string ShardWork(const Graph& graph) {
  std::string work;
  for (const Node& n : graph.nodes()) {
    if (n.op == OpKind::kParameter || n.op == OpKind::kConstant) continue;
    if (work.size() > 400) {
      absl::StrAppend(&work, " ...");
      break;
    }
    absl::StrAppend(&work, work.empty() ? "" : "; ", OpName(n.op), " ",
                    n.shape.ToString());
  }
  return work;
}

absl::Status Builder::AssembleSteps(DeviceProgram& program) {
  // Interleave: segment 0, collective 0, segment 1, ...
  for (size_t seg = 0; seg < closed_.size(); ++seg) {
    Open& o = closed_[seg];
    if (!exports_[seg].empty()) {
      std::vector<Value> outs;
      for (int slot : exports_[seg]) {
        for (const auto& [s, v] : o.values) {
          if (s == slot) outs.push_back(v);
        }
      }
      absl::StatusOr<Graph> g = o.builder->Build(outs);
      if (!g.ok()) {
        return absl::InternalError(absl::StrCat("spmd: segment ", seg,
                                                " of mesh position ", position_,
                                                ": ", g.status().message()));
      }
      Step step;
      step.segment.graph = *std::move(g);
      step.segment.inputs = o.inputs;
      step.segment.outputs = exports_[seg];
      step.segment.shard_shapes = ShardWork(step.segment.graph);
      program.steps.push_back(std::move(step));
    }
    if (seg < steps_.size()) program.steps.push_back(steps_[seg]);
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Builder::EmitOp(const Node& node, std::vector<Value> x,
                                      const Shape& local_out,
                                      const NodePlan& np,
                                      const std::vector<int>& xs) {
  // Zero (or -inf) the padding of contracted / reduced tiled dimensions.
  for (size_t k = 0; k < x.size() && k < np.masked_dims.size(); ++k) {
    if (np.masked_dims[k].empty()) continue;
    const float fill = node.op == OpKind::kReduceMax
                           ? -std::numeric_limits<float>::infinity()
                           : 0.0f;
    x[k] = Mask(x[k], xs[k], np.masked_dims[k], fill);
  }
  std::vector<Shape> global;
  for (int operand : node.operands)
    global.push_back(graph_.node(operand).shape);
  return RecordLocalOp(b(), node, x, global, local_out, np.out.has_partial());
}

}  // namespace

absl::StatusOr<DeviceProgram> BuildDeviceProgram(
    const Graph& graph, const Plan& plan,
    const std::shared_ptr<const Mesh>& mesh, int position,
    const std::vector<std::string>& names,
    std::vector<InsertedCollective>* collectives) {
  Builder builder(graph, plan, mesh, position, names, collectives);
  return builder.Build();
}

}  // namespace podscope::runtime::spmd
