// Meshes, partition specs and shardings: validation, tile geometry, host
// shard extraction, and the lazy-tensor annotations.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lazy/lazy_internal.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/spmd.h"
#include "spmd/plan.h"

namespace podscope::runtime {
namespace {

std::atomic<bool> spmd_enabled{false};

std::string Quoted(const std::string& s) { return absl::StrCat("'", s, "'"); }

}  // namespace

void UseSpmd() { spmd_enabled.store(true); }
bool SpmdEnabled() { return spmd_enabled.load(); }

absl::StatusOr<Mesh> Mesh::Create(std::vector<int> device_ids,
                                  std::vector<int64_t> shape,
                                  std::vector<std::string> axis_names,
                                  int device_count) {
  if (shape.empty()) {
    return absl::InvalidArgumentError("Mesh: the mesh shape is empty");
  }
  if (shape.size() != axis_names.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Mesh: ", shape.size(), " dimensions in shape (",
        absl::StrJoin(shape, ","), ") but ", axis_names.size(), " axis names"));
  }
  int64_t product = 1;
  for (int64_t d : shape) {
    if (d <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Mesh: dimension ", d, " in shape (",
                       absl::StrJoin(shape, ","), ") is not positive"));
    }
    product *= d;
  }
  if (product != static_cast<int64_t>(device_ids.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Mesh: the shape (", absl::StrJoin(shape, ","), ") holds ", product,
        " devices but ", device_ids.size(), " device ids were given"));
  }
  std::set<int> seen;
  for (int id : device_ids) {
    if (id < 0 || id >= device_count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Mesh: device id ", id, " does not exist (the job has ", device_count,
          " devices, ids 0..", device_count - 1, ")"));
    }
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Mesh: device id ", id, " appears more than once"));
    }
  }
  std::set<std::string> names;
  for (const std::string& name : axis_names) {
    if (name.empty()) {
      return absl::InvalidArgumentError("Mesh: an axis name is empty");
    }
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Mesh: axis name ", Quoted(name), " is used twice"));
    }
  }
  Mesh mesh;
  mesh.device_ids_ = std::move(device_ids);
  mesh.shape_ = std::move(shape);
  mesh.axis_names_ = std::move(axis_names);
  return mesh;
}

absl::StatusOr<Mesh> Mesh::Create(std::vector<int> device_ids,
                                  std::vector<int64_t> shape,
                                  std::vector<std::string> axis_names,
                                  const Client& client) {
  return Create(std::move(device_ids), std::move(shape), std::move(axis_names),
                client.device_count());
}

int Mesh::AxisIndex(absl::string_view name) const {
  for (int i = 0; i < rank(); ++i) {
    if (axis_names_[i] == name) return i;
  }
  return -1;
}

std::vector<int64_t> Mesh::Coordinates(int position) const {
  std::vector<int64_t> coords(shape_.size());
  int64_t rest = position;
  for (int i = rank() - 1; i >= 0; --i) {
    coords[i] = rest % shape_[i];
    rest /= shape_[i];
  }
  return coords;
}

int Mesh::PositionOf(int device_id) const {
  for (int i = 0; i < num_devices(); ++i) {
    if (device_ids_[i] == device_id) return i;
  }
  return -1;
}

std::string Mesh::ToString() const {
  std::vector<std::string> quoted;
  for (const std::string& name : axis_names_) quoted.push_back(Quoted(name));
  return absl::StrCat("shape=(", absl::StrJoin(shape_, ","), ") axes=(",
                      absl::StrJoin(quoted, ","), ") devices=[",
                      absl::StrJoin(device_ids_, ","), "]");
}

absl::StatusOr<Sharding> Sharding::Create(std::shared_ptr<const Mesh> mesh,
                                          const PartitionSpec& spec, int rank) {
  if (mesh == nullptr) {
    return absl::InvalidArgumentError("sharding: no mesh");
  }
  if (static_cast<int>(spec.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharding: the spec has ", spec.size(),
                     " entries but the tensor has rank ", rank));
  }
  Sharding sharding;
  sharding.mesh = mesh;
  std::set<int> used;
  for (const auto& axes : spec) {
    std::vector<int> indices;
    for (const std::string& name : axes) {
      const int axis = mesh->AxisIndex(name);
      if (axis < 0) {
        std::vector<std::string> quoted;
        for (const auto& n : mesh->axis_names()) quoted.push_back(Quoted(n));
        return absl::InvalidArgumentError(
            absl::StrCat("sharding: unknown mesh axis ", Quoted(name),
                         " (the mesh has ", absl::StrJoin(quoted, ", "), ")"));
      }
      if (!used.insert(axis).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sharding: mesh axis ", Quoted(name), " is used more than once"));
      }
      indices.push_back(axis);
    }
    sharding.dim_axes.push_back(std::move(indices));
  }
  return sharding;
}

Sharding Sharding::Replicated(std::shared_ptr<const Mesh> mesh, int rank) {
  Sharding sharding;
  sharding.mesh = std::move(mesh);
  sharding.dim_axes.resize(rank);
  return sharding;
}

bool Sharding::IsReplicated() const {
  for (const auto& axes : dim_axes) {
    for (int a : axes) {
      if (mesh->shape()[a] > 1) return false;
    }
  }
  return true;
}

std::string Sharding::Kind() const {
  if (IsReplicated()) return "replicated";
  int64_t shards = 1;
  for (int d = 0; d < rank(); ++d) shards *= NumShards(d);
  return shards == mesh->num_devices() ? "tiled" : "partially replicated";
}

int64_t Sharding::NumShards(int dim) const {
  int64_t n = 1;
  for (int a : dim_axes[dim]) n *= mesh->shape()[a];
  return n;
}

int64_t Sharding::TileIndex(int dim, int position) const {
  const std::vector<int64_t> coords = mesh->Coordinates(position);
  int64_t index = 0;
  for (int a : dim_axes[dim]) index = index * mesh->shape()[a] + coords[a];
  return index;
}

Shape Sharding::ShardShape(const Shape& global) const {
  std::vector<int64_t> dims = global.dims();
  for (int d = 0; d < rank() && d < global.rank(); ++d) {
    const int64_t k = NumShards(d);
    dims[d] = (dims[d] + k - 1) / k;
  }
  return Shape(global.element_type(), std::move(dims));
}

std::vector<int64_t> Sharding::TileStart(const Shape& global,
                                         int position) const {
  const Shape shard = ShardShape(global);
  std::vector<int64_t> start(global.rank());
  for (int d = 0; d < global.rank(); ++d) {
    start[d] = std::min(global.dim(d), TileIndex(d, position) * shard.dim(d));
  }
  return start;
}

PartitionSpec Sharding::spec() const {
  PartitionSpec spec;
  for (const auto& axes : dim_axes) {
    std::vector<std::string> names;
    for (int a : axes) names.push_back(mesh->axis_names()[a]);
    spec.push_back(std::move(names));
  }
  return spec;
}

std::string Sharding::SpecString() const {
  std::vector<std::string> entries;
  for (const auto& axes : dim_axes) {
    if (axes.empty()) {
      entries.push_back("None");
    } else if (axes.size() == 1) {
      entries.push_back(Quoted(mesh->axis_names()[axes[0]]));
    } else {
      std::vector<std::string> names;
      for (int a : axes) names.push_back(Quoted(mesh->axis_names()[a]));
      entries.push_back(absl::StrCat("(", absl::StrJoin(names, ", "), ")"));
    }
  }
  if (entries.size() == 1) return absl::StrCat("(", entries[0], ",)");
  return absl::StrCat("(", absl::StrJoin(entries, ", "), ")");
}

absl::StatusOr<Sharding> TranslateSharding(
    const Sharding& sharding, const std::shared_ptr<const Mesh>& target) {
  if (*sharding.mesh == *target) {
    Sharding same = sharding;
    same.mesh = target;
    return same;
  }
  // Axes of size > 1, in order, must correspond one to one.
  auto big = [](const Mesh& m) {
    std::vector<int> axes;
    for (int a = 0; a < m.rank(); ++a) {
      if (m.shape()[a] > 1) axes.push_back(a);
    }
    return axes;
  };
  const Mesh& from = *sharding.mesh;
  const std::vector<int> fa = big(from);
  const std::vector<int> ta = big(*target);
  bool same_layout =
      from.device_ids() == target->device_ids() && fa.size() == ta.size();
  for (size_t i = 0; same_layout && i < fa.size(); ++i) {
    same_layout = from.shape()[fa[i]] == target->shape()[ta[i]];
  }
  if (!same_layout) {
    return absl::InvalidArgumentError(
        absl::StrCat("the meshes ", from.ToString(), " and ",
                     target->ToString(), " lay the devices out differently"));
  }
  Sharding out;
  out.mesh = target;
  for (const auto& axes : sharding.dim_axes) {
    std::vector<int> mapped;
    for (int a : axes) {
      for (size_t i = 0; i < fa.size(); ++i) {
        if (fa[i] == a) mapped.push_back(ta[i]);
      }
    }
    out.dim_axes.push_back(std::move(mapped));
  }
  return out;
}

namespace {

// Copies the box [src_start, src_start + extent) of `src` (an array of
// `src_shape`) to [dst_start, ...) of `dst` (same rank and element type).
void CopyBox(const void* src, const Shape& src_shape,
             const std::vector<int64_t>& src_start, Literal& dst,
             const std::vector<int64_t>& dst_start,
             const std::vector<int64_t>& extent) {
  const int rank = src_shape.rank();
  for (int64_t e : extent) {
    if (e <= 0) return;
  }
  const int64_t esize = ElementSize(src_shape.element_type());
  if (rank == 0) {
    std::memcpy(dst.untyped_data(), src, esize);
    return;
  }
  const std::vector<int64_t> ss = RowMajorStrides(src_shape.dims());
  const std::vector<int64_t> ds = RowMajorStrides(dst.shape().dims());
  std::vector<int64_t> index(rank, 0);
  const auto* s = static_cast<const char*>(src);
  auto* d = static_cast<char*>(dst.untyped_data());
  const int64_t row = extent[rank - 1] * esize;
  while (true) {
    int64_t so = 0;
    int64_t doff = 0;
    for (int i = 0; i < rank; ++i) {
      so += (src_start[i] + index[i]) * ss[i];
      doff += (dst_start[i] + index[i]) * ds[i];
    }
    std::memcpy(d + doff * esize, s + so * esize, row);
    int i = rank - 2;
    for (; i >= 0; --i) {
      if (++index[i] < extent[i]) break;
      index[i] = 0;
    }
    if (i < 0) return;
  }
}

}  // namespace

Literal ExtractShard(const Literal& global, const Sharding& sharding,
                     int position) {
  Literal shard(sharding.ShardShape(global.shape()));
  spmd::ExtractShardInto(global, sharding, position, shard);
  return shard;
}

namespace spmd {

void ExtractShardInto(const Literal& global, const Sharding& sharding,
                      int position, Literal& shard) {
  const Shape& shard_shape = shard.shape();
  const std::vector<int64_t> start =
      sharding.TileStart(global.shape(), position);
  std::vector<int64_t> extent(shard_shape.rank());
  bool padded = false;
  for (int d = 0; d < shard_shape.rank(); ++d) {
    extent[d] = std::min(shard_shape.dim(d), global.shape().dim(d) - start[d]);
    padded |= extent[d] < shard_shape.dim(d);
  }
  // Only a tile past the value's end has padding; it must read as zeros.
  if (padded && shard.size_bytes() > 0) {
    std::memset(shard.untyped_data(), 0, shard.size_bytes());
  }
  CopyBox(global.untyped_data(), global.shape(), start, shard,
          std::vector<int64_t>(shard_shape.rank(), 0), extent);
}

void InsertShardFrom(const void* shard, const Shape& shard_shape,
                     const Sharding& sharding, int position, Literal& global) {
  const std::vector<int64_t> start =
      sharding.TileStart(global.shape(), position);
  std::vector<int64_t> extent(shard_shape.rank());
  for (int d = 0; d < shard_shape.rank(); ++d) {
    extent[d] = std::min(shard_shape.dim(d), global.shape().dim(d) - start[d]);
  }
  CopyBox(shard, shard_shape, std::vector<int64_t>(shard_shape.rank(), 0),
          global, start, extent);
}

}  // namespace spmd

void InsertShard(const Literal& shard, const Sharding& sharding, int position,
                 Literal& global) {
  spmd::InsertShardFrom(shard.untyped_data(), shard.shape(), sharding, position,
                        global);
}

absl::Status MarkSharding(const Tensor& tensor, const Mesh& mesh,
                          const PartitionSpec& spec) {
  if (!SpmdEnabled()) {
    return absl::FailedPreconditionError(
        "MarkSharding: SPMD is not enabled (call UseSpmd() first)");
  }
  if (!tensor.defined()) {
    return absl::InvalidArgumentError("MarkSharding: undefined tensor");
  }
  PODSCOPE_RETURN_IF_ERROR(tensor.status());
  absl::StatusOr<Sharding> sharding = Sharding::Create(
      std::make_shared<const Mesh>(mesh), spec, tensor.shape().rank());
  if (!sharding.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("MarkSharding on ", tensor.shape().ToString(), ": ",
                     sharding.status().message()));
  }
  tensor.impl()->sharding =
      std::make_shared<const Sharding>(*std::move(sharding));
  return absl::OkStatus();
}

void ClearSharding(const Tensor& tensor) {
  if (tensor.defined()) tensor.impl()->sharding = nullptr;
}

std::optional<Sharding> ShardingSpecOf(const Tensor& tensor) {
  if (!tensor.defined() || tensor.impl()->sharding == nullptr) {
    return std::nullopt;
  }
  return *tensor.impl()->sharding;
}

}  // namespace podscope::runtime
