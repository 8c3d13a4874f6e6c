#ifndef PODSCOPE_RUNTIME_SRC_LAZY_LAZY_SPMD_H_
#define PODSCOPE_RUNTIME_SRC_LAZY_LAZY_SPMD_H_

// The SPMD side of a LazyContext made with LazyContext::CreateSpmd: its
// tensors hold global values as shards on the mesh's local devices
// (ShardedValue); a step's graph is partitioned with the shardings that
// MarkSharding put on its parameters and outputs (SpmdProgram, kept per
// graph and shardings, so later steps reuse it) and run on every device of
// the mesh (SpmdExecutor).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/spmd.h"

namespace podscope::runtime::internal {

struct SpmdLazyState {
  std::shared_ptr<const Mesh> mesh;
  std::unique_ptr<SpmdExecutor> executor;
  // This step's parameters: their values and shardings, by parameter index.
  std::vector<std::shared_ptr<ShardedValue>> parameters;
  std::vector<std::optional<Sharding>> parameter_shardings;
  std::vector<std::pair<const ShardedValue*, Value>> parameter_of_value;
  // Partitioned programs by graph fingerprint and shardings.
  absl::flat_hash_map<std::string, std::shared_ptr<const SpmdProgram>> programs;
  int64_t partitions = 0;
  std::shared_ptr<const SpmdProgram> last;  // the last step's program
};

// A global literal (equal on every process), replicated on the mesh.
absl::StatusOr<std::shared_ptr<ShardedValue>> SpmdFromLiteral(
    SpmdLazyState& state, const Literal& literal);

// Runs `graph` (parameters: state.parameters) with `annotations` (output
// node id -> sharding); one sharded value per graph output.
absl::StatusOr<std::vector<std::shared_ptr<ShardedValue>>> SpmdRunStep(
    SpmdLazyState& state, const Graph& graph,
    const std::map<int, Sharding>& annotations);

struct TensorImpl;

// LazyContext::Sync for an SPMD context: runs `graph` (the step, whose
// outputs are `live`'s values; or its recording error), gives each live
// tensor its sharded value or the step's error, and sets *fingerprint.
absl::Status SpmdSyncStep(SpmdLazyState& state,
                          const absl::StatusOr<Graph>& graph,
                          const std::vector<std::shared_ptr<TensorImpl>>& live,
                          int64_t step, uint64_t* fingerprint);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_LAZY_LAZY_SPMD_H_
