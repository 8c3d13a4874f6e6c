// Sharding propagation: for every node, the sharding of its result and the
// shardings its operands must have, rule by rule (see spmd.h and
// docs/spmd.md for the rules).

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spmd/plan.h"

namespace podscope::runtime::spmd {
namespace {

using Axes = std::vector<int>;

bool Disjoint(const Axes& a, const std::set<int>& used) {
  for (int x : a) {
    if (used.count(x)) return false;
  }
  return true;
}

void Use(const Axes& a, std::set<int>& used) {
  used.insert(a.begin(), a.end());
}

State Tiles(std::vector<Axes> dims) {
  State s;
  s.dims = std::move(dims);
  return s;
}

// `s` without partial results.
State Whole(const State& s) { return Tiles(s.dims); }

State Replicated(int rank) { return Tiles(std::vector<Axes>(rank)); }

int64_t Shards(const Axes& axes, const Mesh& mesh) {
  int64_t n = 1;
  for (int a : axes) n *= mesh.shape()[a];
  return n;
}

int64_t TiledCount(const State& s, const Mesh& mesh) {
  int64_t n = 1;
  for (const Axes& a : s.dims) n *= Shards(a, mesh);
  return n;
}

// Reshape: dimension groups of equal products; a tiled group's first
// dimension carries over when both sides split evenly (or the group is one
// identical dimension).
void PlanReshape(const Shape& in, const Shape& out, const State& x,
                 NodePlan& plan, const Mesh& mesh) {
  State req = Whole(x);
  State result = Replicated(out.rank());
  int i = 0;
  int j = 0;
  while (i < in.rank() || j < out.rank()) {
    int i0 = i;
    int j0 = j;
    int64_t pi = i < in.rank() ? in.dim(i++) : 1;
    int64_t pj = j < out.rank() ? out.dim(j++) : 1;
    while (pi != pj) {
      if (pi < pj && i < in.rank()) {
        pi *= in.dim(i++);
      } else if (j < out.rank()) {
        pj *= out.dim(j++);
      } else if (i < in.rank()) {
        pi *= in.dim(i++);
      } else {
        break;
      }
    }
    // Group [i0, i) -> [j0, j).
    bool carried = false;
    if (i0 < in.rank() && j0 < out.rank() && !x.dims[i0].empty()) {
      bool rest_replicated = true;
      for (int d = i0 + 1; d < i; ++d) {
        if (!x.dims[d].empty()) rest_replicated = false;
      }
      const int64_t k = Shards(x.dims[i0], mesh);
      const bool same = (i - i0 == 1 && j - j0 == 1);
      if (rest_replicated &&
          (same || (in.dim(i0) % k == 0 && out.dim(j0) % k == 0))) {
        result.dims[j0] = x.dims[i0];
        carried = true;
      }
    }
    for (int d = i0; d < i && d < in.rank(); ++d) {
      if (!(carried && d == i0)) req.dims[d].clear();
    }
  }
  plan.operands = {req};
  plan.out = result;
}

}  // namespace

// Elementwise ops (ir.h IsElementwise): the most finely tiled operand
// decides; the others follow.
void PlanElementwise(const Node& node, const std::vector<State>& x,
                     const Mesh& mesh, NodePlan& np) {
  const int rank = node.shape.rank();
  int best = 0;
  for (size_t k = 1; k < x.size(); ++k) {
    if (TiledCount(x[k], mesh) > TiledCount(x[best], mesh)) best = k;
  }
  State target = Whole(x[best]);
  // A partial operand whose leading dimension is already tiled is
  // reduce-scattered onto it (its axes appended, minor): cheaper than
  // an all-reduce, and what follows runs on a smaller tile.
  if (rank >= 2 && !target.dims[0].empty()) {
    std::set<int> used;
    for (const Axes& d : target.dims) Use(d, used);
    for (const State& operand : x) {
      if (!(Whole(operand) == target)) continue;
      for (int axis : operand.partial) {
        if (used.count(axis)) continue;
        if (node.shape.dim(0) <
            Shards(target.dims[0], mesh) * mesh.shape()[axis]) {
          continue;
        }
        target.dims[0].push_back(axis);
        used.insert(axis);
      }
    }
  }
  np.rule = Rule::kLocal;
  np.operands.assign(x.size(), target);
  np.out = target;
}

namespace {

// The fallback: every operand gathered, the op run on the full values.
void PlanReplicated(const Graph& graph, const Node& node, NodePlan& np) {
  np.rule = Rule::kReplicated;
  np.operands.clear();
  for (int operand : node.operands) {
    np.operands.push_back(Replicated(graph.node(operand).shape.rank()));
  }
  np.out = Replicated(node.shape.rank());
}

// A parameter is sharded as the caller gave it, else replicated.
void PlanParameter(const Node& node, const std::vector<State>& parameters,
                   NodePlan& np) {
  np.rule = Rule::kParameter;
  const int index = static_cast<int>(node.attrs.parameter_index);
  np.out = index >= 0 && index < static_cast<int>(parameters.size())
               ? parameters[index]
               : Replicated(node.shape.rank());
}

// Broadcast: a tiled dimension carries over unless it is the one expanded.
void PlanBroadcast(const Shape& in, const Node& node, const State& x,
                   NodePlan& np) {
  State req = Whole(x);
  State out = Replicated(node.shape.rank());
  for (int d = 0; d < in.rank(); ++d) {
    const int od = static_cast<int>(node.attrs.axes[d]);
    if (in.dim(d) == node.shape.dim(od)) {
      out.dims[od] = req.dims[d];
    } else {
      req.dims[d].clear();
    }
  }
  np.rule = Rule::kLocal;
  np.operands = {req};
  np.out = out;
}

void PlanTranspose(const Node& node, const State& x, NodePlan& np) {
  const int rank = node.shape.rank();
  State out = Replicated(rank);
  for (int d = 0; d < rank; ++d) out.dims[d] = x.dims[node.attrs.axes[d]];
  np.rule = Rule::kLocal;
  np.operands = {Whole(x)};
  np.out = out;
}

// Sum, mean and max: a reduced tiled dimension leaves a partial result
// (and its padding masked, as it is a contraction).
void PlanReduce(int in_rank, const Node& node, const State& x, NodePlan& np) {
  const OpAttrs& a = node.attrs;
  std::set<int> reduced;
  for (int64_t ax : a.axes) reduced.insert(ax < 0 ? ax + in_rank : ax);
  State out;
  for (int d = 0; d < in_rank; ++d) {
    if (!reduced.count(d)) {
      out.dims.push_back(x.dims[d]);
    } else {
      if (a.keep_dims) out.dims.push_back({});
      for (int ax : x.dims[d]) out.partial.push_back(ax);
      if (!x.dims[d].empty()) np.masked_dims[0].push_back(d);
    }
  }
  std::sort(out.partial.begin(), out.partial.end());
  out.partial_max = node.op == OpKind::kReduceMax;
  np.rule = Rule::kReduce;
  np.operands = {Whole(x)};
  np.out = out;
}

// ArgMax needs its axis whole; the other dimensions stay tiled.
void PlanArgMax(const Node& node, const State& x, NodePlan& np) {
  const int64_t axis = node.attrs.axis;
  State req = Whole(x);
  req.dims[axis].clear();
  State out;
  for (int d = 0; d < static_cast<int>(req.dims.size()); ++d) {
    if (d != axis || node.attrs.keep_dims) out.dims.push_back(req.dims[d]);
  }
  np.rule = Rule::kLocal;
  np.operands = {req};
  np.out = out;
}

// Softmax and LogSoftmax need their axis whole.
void PlanSoftmax(const Node& node, const State& x, NodePlan& np) {
  State req = Whole(x);
  req.dims[node.attrs.axis].clear();
  np.rule = Rule::kLocal;
  np.operands = {req};
  np.out = req;
}

// OneHot keeps the batch tiling; the classes are whole.
void PlanOneHot(const State& x, NodePlan& np) {
  np.rule = Rule::kLocal;
  np.operands = {Whole(x)};
  np.out = Tiles({x.dims[0], {}});
}

// Dot (and batched dot): batch, rows and columns keep disjoint mesh axes;
// a tiled contraction leaves a partial result.
void PlanDot(const Node& node, const std::vector<State>& x, NodePlan& np) {
  const int off = node.shape.rank() - 2;
  std::set<int> used;
  Axes batch;
  if (off == 1) {
    batch = !x[0].dims[0].empty() ? x[0].dims[0] : x[1].dims[0];
    Use(batch, used);
  }
  Axes m = x[0].dims[off];
  if (!Disjoint(m, used)) m.clear();
  Use(m, used);
  Axes n = x[1].dims[off + 1];
  if (!Disjoint(n, used)) n.clear();
  Use(n, used);
  Axes k = x[0].dims[off + 1];
  if (k.empty() || !Disjoint(k, used)) k = x[1].dims[off];
  if (!Disjoint(k, used)) k.clear();
  State ra;
  State rb;
  State out;
  if (off == 1) {
    ra.dims.push_back(batch);
    rb.dims.push_back(batch);
    out.dims.push_back(batch);
  }
  ra.dims.push_back(m);
  ra.dims.push_back(k);
  rb.dims.push_back(k);
  rb.dims.push_back(n);
  out.dims.push_back(m);
  out.dims.push_back(n);
  out.partial = k;
  std::sort(out.partial.begin(), out.partial.end());
  if (!k.empty()) np.masked_dims = {{off + 1}, {off}};
  np.rule = Rule::kDot;
  np.operands = {ra, rb};
  np.out = out;
}

// The convolutions: (batch-like, feature, contraction) per op, spatial
// dimensions replicated; a tiled contraction leaves a partial result.
void PlanConv(const Node& node, const std::vector<State>& x, NodePlan& np) {
  std::set<int> used;
  State r0 = Replicated(4);
  State r1 = Replicated(4);
  State out = Replicated(4);
  Axes k;
  if (node.op == OpKind::kConv2D) {
    // input [N,C,H,W], weights [O,C,kh,kw] -> [N,O,H',W'].
    Axes batch = x[0].dims[0];
    Use(batch, used);
    Axes o = x[1].dims[0];
    if (!Disjoint(o, used)) o.clear();
    Use(o, used);
    k = !x[0].dims[1].empty() ? x[0].dims[1] : x[1].dims[1];
    if (!Disjoint(k, used)) k.clear();
    r0.dims = {batch, k, {}, {}};
    r1.dims = {o, k, {}, {}};
    out.dims = {batch, o, {}, {}};
    if (!k.empty()) np.masked_dims = {{1}, {1}};
  } else if (node.op == OpKind::kConv2DBackpropInput) {
    // grad [N,O,H',W'], weights [O,C,kh,kw] -> [N,C,H,W].
    Axes batch = x[0].dims[0];
    Use(batch, used);
    Axes c = x[1].dims[1];
    if (!Disjoint(c, used)) c.clear();
    Use(c, used);
    k = !x[0].dims[1].empty() ? x[0].dims[1] : x[1].dims[0];
    if (!Disjoint(k, used)) k.clear();
    r0.dims = {batch, k, {}, {}};
    r1.dims = {k, c, {}, {}};
    out.dims = {batch, c, {}, {}};
    if (!k.empty()) np.masked_dims = {{1}, {0}};
  } else {
    // input [N,C,H,W], grad [N,O,H',W'] -> [O,C,kh,kw].
    // The more finely tiled batch (the gradient's is usually larger
    // than the input's, so the input is the one to reshard).
    k = x[1].dims[0].size() > x[0].dims[0].size() ? x[1].dims[0] : x[0].dims[0];
    Use(k, used);
    Axes o = x[1].dims[1];
    if (!Disjoint(o, used)) o.clear();
    Use(o, used);
    Axes c = x[0].dims[1];
    if (!Disjoint(c, used)) c.clear();
    r0.dims = {k, c, {}, {}};
    r1.dims = {k, o, {}, {}};
    out.dims = {o, c, {}, {}};
    if (!k.empty()) np.masked_dims = {{0}, {0}};
  }
  out.partial = k;
  std::sort(out.partial.begin(), out.partial.end());
  np.rule = Rule::kDot;
  np.operands = {r0, r1};
  np.out = out;
}

// Pooling keeps batch and channel tiling; the windows' dimensions are
// whole.
void PlanMaxPool(const State& x, NodePlan& np) {
  State req = Tiles({x.dims[0], x.dims[1], {}, {}});
  np.rule = Rule::kLocal;
  np.operands = {req};
  np.out = req;
}

// The pooling gradient: the input and the gradient tiled alike.
void PlanMaxPoolGrad(const State& x, NodePlan& np) {
  std::set<int> used;
  Axes n = x.dims[0];
  Use(n, used);
  Axes c = x.dims[1];
  if (!Disjoint(c, used)) c.clear();
  State req = Tiles({n, c, {}, {}});
  np.rule = Rule::kLocal;
  np.operands = {req, req};
  np.out = req;
}

// NLL loss over a tiled batch: each device's sum is partial.
void PlanNllLoss(const std::vector<State>& x, NodePlan& np) {
  Axes k = !x[0].dims[0].empty() ? x[0].dims[0] : x[1].dims[0];
  np.rule = Rule::kNllLoss;
  np.operands = {Tiles({k, {}}), Tiles({k})};
  np.out = Replicated(0);
  np.out.partial = k;
  std::sort(np.out.partial.begin(), np.out.partial.end());
  if (!k.empty()) np.masked_dims = {{0}, {}};
}

// The rule of `node`'s op family, given its operands' states `x`.
void PlanNode(const Graph& graph, const Node& node, const Mesh& mesh,
              const std::vector<State>& parameters, const std::vector<State>& x,
              NodePlan& np) {
  if (IsElementwise(node.op)) {
    PlanElementwise(node, x, mesh, np);
    return;
  }
  switch (node.op) {
    case OpKind::kParameter:
      PlanParameter(node, parameters, np);
      break;
    case OpKind::kConstant:
      np.rule = Rule::kLocal;
      np.out = Replicated(node.shape.rank());
      break;
    case OpKind::kBroadcast:
      PlanBroadcast(graph.node(node.operands[0]).shape, node, x[0], np);
      break;
    case OpKind::kReshape:
      np.rule = Rule::kLocal;
      PlanReshape(graph.node(node.operands[0]).shape, node.shape, x[0], np,
                  mesh);
      break;
    case OpKind::kTranspose:
      PlanTranspose(node, x[0], np);
      break;
    case OpKind::kReduceSum:
    case OpKind::kReduceMean:
    case OpKind::kReduceMax:
      PlanReduce(graph.node(node.operands[0]).shape.rank(), node, x[0], np);
      break;
    case OpKind::kArgMax:
      PlanArgMax(node, x[0], np);
      break;
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
      PlanSoftmax(node, x[0], np);
      break;
    case OpKind::kOneHot:
      PlanOneHot(x[0], np);
      break;
    case OpKind::kDot:
      PlanDot(node, x, np);
      break;
    case OpKind::kConv2D:
    case OpKind::kConv2DBackpropInput:
    case OpKind::kConv2DBackpropFilter:
      PlanConv(node, x, np);
      break;
    case OpKind::kMaxPool2D:
      PlanMaxPool(x[0], np);
      break;
    case OpKind::kMaxPool2DGrad:
      PlanMaxPoolGrad(x[0], np);
      break;
    case OpKind::kNllLoss:
      PlanNllLoss(x, np);
      break;
    default:
      PlanReplicated(graph, node, np);
      break;
  }
}

}  // namespace

absl::StatusOr<Plan> Propagate(const Graph& graph, const Mesh& mesh,
                               const std::vector<State>& parameters,
                               const std::map<int, State>& annotations) {
  Plan plan;
  plan.nodes.resize(graph.nodes().size());
  for (size_t id = 0; id < graph.nodes().size(); ++id) {
    const Node& node = graph.node(id);
    NodePlan& np = plan.nodes[id];
    const int rank = node.shape.rank();
    std::vector<State> x;
    for (int operand : node.operands) x.push_back(plan.final_state(operand));
    np.masked_dims.assign(node.operands.size(), {});
    PlanNode(graph, node, mesh, parameters, x, np);
    if (auto it = annotations.find(static_cast<int>(id));
        it != annotations.end()) {
      if (static_cast<int>(it->second.dims.size()) != rank) {
        return absl::InvalidArgumentError(absl::StrCat(
            "spmd: the sharding of node %", id, " has ", it->second.dims.size(),
            " entries but its rank is ", rank));
      }
      np.annotation = it->second;
    }
  }
  return plan;
}

}  // namespace podscope::runtime::spmd
