// The seed's MNIST SPMD example (003): the model of mnist/trainer.h trained
// as one global program that the runtime's SPMD partitioner splits over
// every device of the job.
//
// Meshes, as the seed declares them over N = all devices of the job:
//   conv_mesh   (N/2, 2, 1, 1) axes ("data", "dim1", "dim2", "dim3")
//   linear_mesh (N/2, 2)       axes ("data", "model")
// (with an odd N, (N, 1, 1, 1) and (N, 1): the same shardings, nothing
// split over the second axis).
// The batch is the job's global batch, split over "data" as evenly as the
// partitioner tiles it (16 over 3: 6, 6, 4; the padding is masked, so the
// loss is the mean over the real images).
// Shardings (the seed's; linear weights are stored [in, out], transposed
// from PyTorch's [out, in], so their specs are transposed too):
//   input       conv_mesh ("data", "dim1", None, None)
//   conv1/conv2 weights conv_mesh ("data", None, None, None)
//   fc1.weight  linear_mesh ("data", None)    -> stored (None, "data")
//   fc2.weight  linear_mesh ("data", "model") -> stored ("model", "data")
//   biases, labels: replicated. Momentum buffers follow their weights.
// One step (forward, NLL loss, gradients, SGD with momentum) is one
// partitioned program; every process passes the same global batch and
// keeps only its devices' shards. The loss equals the unsharded step's
// within floating-point reassociation.
#ifndef PODSCOPE_EXAMPLES_MNIST_SPMD_TRAINER_H_
#define PODSCOPE_EXAMPLES_MNIST_SPMD_TRAINER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "podscope/runtime/collectives.h"
#include "podscope/runtime/pjrt/client.h"
#include "podscope/runtime/spmd.h"

namespace podscope::mnist {

struct SpmdTrainerOptions {
  float learning_rate = 0.01f;
  float momentum = 0.5f;
  uint32_t seed = 12;
  // One rank per process (null: single process).
  runtime::Communicator* communicator = nullptr;
};

class SpmdTrainer {
 public:
  // Over every device of `client`'s job (any number of them).
  static absl::StatusOr<std::unique_ptr<SpmdTrainer>> Create(
      runtime::Client* client, int batch_size,
      const SpmdTrainerOptions& options = {});

  // One step on the global batch (n x 784 floats, n labels, n ==
  // batch_size), equal on every process.
  absl::Status Step(absl::Span<const float> images,
                    absl::Span<const int32_t> labels);
  absl::StatusOr<float> LastLoss();
  // Every parameter, gathered to the host (a collective across processes).
  absl::StatusOr<std::vector<runtime::Literal>> Parameters();

  const runtime::SpmdProgram& program() const { return *program_; }
  const runtime::Mesh& conv_mesh() const { return *conv_mesh_; }
  // "conv1.weight", ... in parameter order.
  static const std::vector<std::string>& ParameterNames();
  // Bytes the inserted collectives of one step move per device, and the
  // least the shardings require.
  int64_t CollectiveBytesPerStep() const;
  int64_t MinCollectiveBytesPerStep() const;
  absl::Status WaitUntilIdle() const;

 private:
  SpmdTrainer() = default;
  // Shards the step program (the seed's shardings of input, labels and
  // weights) over the meshes, which must exist.
  absl::Status PartitionStep(const runtime::Graph& graph);
  runtime::Client* client_ = nullptr;
  int batch_size_ = 0;
  std::shared_ptr<const runtime::Mesh> conv_mesh_;
  std::shared_ptr<const runtime::Mesh> linear_mesh_;
  std::shared_ptr<const runtime::SpmdProgram> program_;
  std::unique_ptr<runtime::SpmdExecutor> executor_;
  runtime::Sharding input_sharding_;
  runtime::Sharding label_sharding_;
  std::vector<runtime::ShardedValue> params_;    // 8
  std::vector<runtime::ShardedValue> velocity_;  // 8
  runtime::ShardedValue loss_;
};

}  // namespace podscope::mnist

#endif  // PODSCOPE_EXAMPLES_MNIST_SPMD_TRAINER_H_
