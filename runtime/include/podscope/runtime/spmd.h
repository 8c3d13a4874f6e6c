// SPMD (the seed's torch_xla.distributed.spmd): a logical mesh over the
// job's global devices, shardings of tensors over it, and a partitioner that
// turns one global program into one program per device.
//
// Contract:
// - Mesh::Create(device_ids, shape, axis_names, device_count): ids unique
//   and in [0, device_count), product of `shape` == number of ids, axis
//   names unique and non-empty; each violation is InvalidArgument naming it.
//   Device ids are laid out row-major over the mesh shape.
// - A PartitionSpec has one entry per tensor dimension: the mesh axes the
//   dimension is split over (major first; one axis, a tuple, or none =
//   replicated). Axes not used by any dimension replicate the tensor.
//   Sharding::Create rejects (naming them) an unknown axis, an axis used
//   twice and a spec whose length is not the tensor's rank.
// - Shards are ceil-divided: dimension n over k shards gives tiles of
//   ceil(n/k); the last tiles are padded (their padding holds no meaning and
//   never reaches a result).
// - SpmdProgram::Partition propagates shardings from the parameters (and
//   annotated nodes) through every op: elementwise ops, broadcasts,
//   reshapes, transposes, reductions, dot, conv2d and its gradients and
//   pooling keep batch/feature shardings; other ops run replicated. Where
//   shardings meet it inserts all-gather / all-reduce / reduce-scatter,
//   each with the sharding change that caused it. The result equals the
//   unsharded program's within floating-point reassociation.
// - SpmdExecutor runs the per-device programs on this process's mesh
//   devices (each device's stream runs its program) and exchanges shards
//   between processes with a Communicator (null: the mesh must be all
//   local). Every process must call Execute with the same program in the
//   same order.
// - Lazy tensors: MarkSharding / ClearSharding / ShardingSpecOf annotate a
//   tensor (UseSpmd() must have been called first, as xr.use_spmd()).
#ifndef PODSCOPE_RUNTIME_SPMD_H_
#define PODSCOPE_RUNTIME_SPMD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "podscope/runtime/collectives.h"
#include "podscope/runtime/ir/ir.h"
#include "podscope/runtime/ir/literal.h"
#include "podscope/runtime/ir/shape.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/pjrt/buffer.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::runtime {

// Turns SPMD mode on for the process (xr.use_spmd()).
void UseSpmd();
bool SpmdEnabled();

class Mesh {
 public:
  static absl::StatusOr<Mesh> Create(std::vector<int> device_ids,
                                     std::vector<int64_t> shape,
                                     std::vector<std::string> axis_names,
                                     int device_count);
  // Over `client`'s global devices.
  static absl::StatusOr<Mesh> Create(std::vector<int> device_ids,
                                     std::vector<int64_t> shape,
                                     std::vector<std::string> axis_names,
                                     const Client& client);

  const std::vector<int>& device_ids() const { return device_ids_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  int num_devices() const { return static_cast<int>(device_ids_.size()); }
  int rank() const { return static_cast<int>(shape_.size()); }
  // -1 if there is no such axis.
  int AxisIndex(absl::string_view name) const;
  // Coordinates of the device at `position` (an index into device_ids()).
  std::vector<int64_t> Coordinates(int position) const;
  // The position of a device id in the mesh, or -1.
  int PositionOf(int device_id) const;
  // "shape=(2,2) axes=('data','model') devices=[0,1,2,3]".
  std::string ToString() const;

  friend bool operator==(const Mesh& a, const Mesh& b) {
    return a.device_ids_ == b.device_ids_ && a.shape_ == b.shape_ &&
           a.axis_names_ == b.axis_names_;
  }

 private:
  std::vector<int> device_ids_;
  std::vector<int64_t> shape_;
  std::vector<std::string> axis_names_;
};

// Per dimension: the axes it is split over, e.g. {{"data"}, {}} for
// ("data", None) and {{"data", "dim1"}, {}} for (("data", "dim1"), None).
using PartitionSpec = std::vector<std::vector<std::string>>;

// A validated placement of a tensor of rank `dim_axes.size()` on a mesh.
struct Sharding {
  std::shared_ptr<const Mesh> mesh;
  // Per dimension: mesh axis indices, major first.
  std::vector<std::vector<int>> dim_axes;

  static absl::StatusOr<Sharding> Create(std::shared_ptr<const Mesh> mesh,
                                         const PartitionSpec& spec, int rank);
  static Sharding Replicated(std::shared_ptr<const Mesh> mesh, int rank);

  int rank() const { return static_cast<int>(dim_axes.size()); }
  bool IsReplicated() const;
  // "replicated", "tiled" (every mesh axis used) or "partially replicated".
  std::string Kind() const;
  int64_t NumShards(int dim) const;
  // The tile index of the device at mesh `position` along `dim`.
  int64_t TileIndex(int dim, int position) const;
  // The per-device shape: each dimension ceil-divided by its shards.
  Shape ShardShape(const Shape& global) const;
  // The [start, start + length) range of `global` that `position` holds
  // along each dimension (length may be short or 0 at the end).
  std::vector<int64_t> TileStart(const Shape& global, int position) const;
  PartitionSpec spec() const;
  // "('data', None)", "(('data', 'dim1'), None)".
  std::string SpecString() const;

  friend bool operator==(const Sharding& a, const Sharding& b) {
    return a.dim_axes == b.dim_axes &&
           (a.mesh == b.mesh || (a.mesh && b.mesh && *a.mesh == *b.mesh));
  }
};

// The same placement over `target`, a mesh that lays the same devices out
// alike once axes of size 1 are ignored (the seed's conv mesh (N/2,2,1,1)
// and linear mesh (N/2,2)): axes of size > 1 correspond in order.
absl::StatusOr<Sharding> TranslateSharding(
    const Sharding& sharding, const std::shared_ptr<const Mesh>& target);

// Lazy-tensor annotations (xs.mark_sharding). Errors name the bad axis or
// the rank mismatch; a tensor carrying an error keeps it.
absl::Status MarkSharding(const Tensor& tensor, const Mesh& mesh,
                          const PartitionSpec& spec);
void ClearSharding(const Tensor& tensor);
std::optional<Sharding> ShardingSpecOf(const Tensor& tensor);

// Global <-> shards on the host.
Literal ExtractShard(const Literal& global, const Sharding& sharding,
                     int position);
// Writes `shard` (the tile of `position`) into `global`.
void InsertShard(const Literal& shard, const Sharding& sharding, int position,
                 Literal& global);

// A collective the partitioner inserted.
struct InsertedCollective {
  std::string kind;    // "all_gather", "all_reduce", "reduce_scatter"
  std::string reason;  // "fc2.weight: ('data','model') -> replicated for dot"
  std::string tensor;  // the value's name, e.g. "fc2.weight" or "%12"
  Shape shape;         // global shape of the value
  std::string from;    // spec strings (+ " partial(axes)")
  std::string to;
  int64_t bytes = 0;      // bytes each device sends (ring algorithm)
  int64_t min_bytes = 0;  // the least any algorithm must move for the change
  int group_size = 1;
};

namespace spmd {
struct DeviceProgram;
struct Plan;
}  // namespace spmd

class SpmdProgram {
 public:
  // `parameter_shardings[i]` for parameter i (nullopt: replicated);
  // `annotations` force node ids to a sharding (MarkSharding on values);
  // `parameter_names` name parameters in reasons and traces.
  static absl::StatusOr<std::shared_ptr<const SpmdProgram>> Partition(
      const Graph& graph, std::shared_ptr<const Mesh> mesh,
      std::vector<std::optional<Sharding>> parameter_shardings,
      std::map<int, Sharding> annotations = {},
      std::vector<std::string> parameter_names = {});
  ~SpmdProgram();

  const Graph& graph() const { return graph_; }
  const std::shared_ptr<const Mesh>& mesh() const { return mesh_; }
  const Sharding& parameter_sharding(int i) const { return params_[i]; }
  // Output shardings (an output left partial is all-reduced first).
  const Sharding& output_sharding(int i) const { return outputs_[i]; }
  const std::vector<InsertedCollective>& collectives() const {
    return collectives_;
  }
  // The sharding chosen for every node ("%id op spec").
  std::string ToString() const;
  const spmd::DeviceProgram& device_program(int position) const;
  // The per-device shard shapes of the outputs.
  const std::vector<std::string>& parameter_names() const { return names_; }

 private:
  SpmdProgram() = default;
  Graph graph_;
  std::shared_ptr<const Mesh> mesh_;
  std::vector<Sharding> params_;
  std::vector<Sharding> outputs_;
  std::vector<InsertedCollective> collectives_;
  std::vector<std::string> names_;
  std::string listing_;
  std::vector<std::unique_ptr<spmd::DeviceProgram>> programs_;
};

// A global value held as shards on this process's mesh devices.
struct ShardedValue {
  Shape global_shape;
  Sharding sharding;
  // By mesh position; null for positions of other processes.
  std::vector<BufferPtr> shards;
};

class SpmdExecutor {
 public:
  // `communicator`: one rank per process of the job, ranks = process
  // indices (null: every mesh device must be addressable).
  static absl::StatusOr<std::unique_ptr<SpmdExecutor>> Create(
      Client* client, std::shared_ptr<const Mesh> mesh,
      Communicator* communicator = nullptr);

  // Splits a global value (equal on every process) onto the local devices.
  absl::StatusOr<ShardedValue> Shard(const Literal& global,
                                     const Sharding& sharding);
  // Assembles the global value (a collective across processes).
  absl::StatusOr<Literal> Gather(const ShardedValue& value);

  // Runs `program` with arguments sharded as its parameters (resharded on
  // the host if not); returns the outputs sharded as output_sharding(i).
  absl::StatusOr<std::vector<ShardedValue>> Execute(
      const SpmdProgram& program, absl::Span<const ShardedValue> arguments);

  int64_t collective_bytes() const { return collective_bytes_; }

 private:
  // Each mesh position's values, by the device programs' slot numbers.
  using Slots = std::vector<std::vector<BufferPtr>>;

  SpmdExecutor() = default;
  // Execute's parts: the arguments bound to the parameter slots (resharded
  // if needed), step `k` as a compute segment on every local device or as
  // a collective exchanged on the host, and the outputs read from the
  // slots.
  absl::Status BindArguments(const SpmdProgram& program,
                             absl::Span<const ShardedValue> arguments,
                             Slots& slots);
  absl::Status RunSegments(const SpmdProgram& program, size_t k, Slots& slots);
  absl::Status RunCollective(const SpmdProgram& program, size_t k,
                             Slots& slots);
  // `literal`, shared by the transfers that read it and back in the host
  // pool after the last of them.
  std::shared_ptr<const Literal> Pooled(Literal literal) const;
  // `value` transferred to `device` without a copy of its own.
  absl::StatusOr<BufferPtr> SharedToDevice(
      const std::shared_ptr<const Literal>& value, Device* device);
  std::vector<ShardedValue> Outputs(const SpmdProgram& program,
                                    const Slots& slots) const;

  Client* client_ = nullptr;
  std::shared_ptr<const Mesh> mesh_;
  Communicator* communicator_ = nullptr;
  std::vector<Device*> devices_;  // by mesh position; null if not local
  std::vector<int> process_of_;   // by mesh position
  int64_t collective_bytes_ = 0;
  // The collectives' host literals, kept for the next step (execute.cc).
  class HostPool;
  std::shared_ptr<HostPool> host_pool_;
};

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_SPMD_H_
