// The seed's MNIST CNN on the runtime's lazy tensors, trained data-parallel
// over a process's devices (CPU_NUM_DEVICES).
//
// Model (the seed's MNISTNet): conv 32 3x3 -> relu -> conv 64 3x3 -> relu
// -> max_pool 2 -> dropout -> flatten -> fc 128 -> relu -> dropout -> fc 10
// -> log_softmax; NLL loss; SGD with momentum (PyTorch's rule).
//
// Every device holds a replica of the parameters and takes a slice of each
// batch, as even as SplitEvenly makes it (any batch of at least one image
// per device: 256 images over 3 devices are slices of 86, 85 and 85).
// After the backward pass the replicas' gradients are averaged with
// AllReduceMean (bitwise equal on every device), each weighted by its
// slice's share of the batch, so each replica applies the same update and
// the replicas stay identical: the result is the full batch's gradient
// step, the mean over its real examples (with equal slices, what
// DistributedDataParallel computes).
//
// Across processes (TrainerOptions::communicator): rank 0's parameters are
// broadcast to every replica at creation (the seed's
// broadcast_master_param), each process steps on its own part of the
// job's batch (PyTorch's convention: a batch per process; the processes
// may pass different numbers of images), the processes add up their
// numbers of images, and the gradients, each weighted by its slice's
// share of the job's images, are all-reduced (sum) over every process's
// replicas with one Gloo call per parameter and process, so the replicas
// stay bitwise identical everywhere.
#ifndef PODSCOPE_EXAMPLES_MNIST_TRAINER_H_
#define PODSCOPE_EXAMPLES_MNIST_TRAINER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "podscope/runtime/collectives.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::mnist {

// The parameters PyTorch's default init gives the model under `seed`:
// conv1 w [32,1,3,3], b, conv2 w [64,32,3,3], b, fc1 w [9216,128], b,
// fc2 w [128,10], b (linear weights stored [in, out]).
std::vector<runtime::Literal> InitialParameters(uint32_t seed);

struct TrainerOptions {
  float learning_rate = 0.01f;
  float momentum = 0.5f;
  // The seed's rates are 0.25 (after the pool) and 0.5 (after fc 128);
  // 0 leaves a layer out.
  float conv_dropout = 0.0f;
  float fc_dropout = 0.0f;
  // Parameter initialization (PyTorch's default, drawn on the host) and,
  // plus the replica index, each device's dropout seed.
  uint32_t seed = 12;
  // Data parallelism across processes (not owned; outlives the trainer):
  // Step's batch is then this process's part of the job's batch, and
  // LastLoss the mean over every process's images.
  runtime::Communicator* communicator = nullptr;
};

// The sizes of `parts` slices of `n` examples, as even as they can be: the
// first n % parts slices hold one example more than the others, so the
// last slice is the smaller one when n does not divide. Slices are empty
// when n < parts.
std::vector<int> SplitEvenly(int n, int parts);

class Trainer {
 public:
  // One replica per device in `devices` (addressable devices of `client`).
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      runtime::Client* client, absl::Span<runtime::Device* const> devices,
      const TrainerOptions& options = {});

  int num_replicas() const { return static_cast<int>(replicas_.size()); }

  // One SGD step on a batch of `n` images (n x 784 floats) and labels,
  // split over the replicas by SplitEvenly; n must be at least
  // num_replicas(). The gradient is the mean over every image of the
  // batch (over every process's batch with a communicator). Dispatches
  // the work and returns without waiting for it.
  absl::Status Step(absl::Span<const float> images,
                    absl::Span<const int32_t> labels);
  // The mean loss over every image of the last step's batch (of every
  // process's batch with a communicator); waits for that step.
  absl::StatusOr<float> LastLoss() const;

  // The predicted class of each of `n` images (evaluation mode: no
  // dropout), with the batch split across the replicas like Step's.
  absl::StatusOr<std::vector<int>> Predict(absl::Span<const float> images);

  // Replica r's parameters: conv1 w, b, conv2 w, b, fc1 w, b, fc2 w, b.
  const std::vector<runtime::Tensor>& params(int r) const {
    return replicas_[r].params;
  }
  runtime::LazyContext& context(int r) const { return *replicas_[r].context; }
  // Waits until every device has run what was dispatched to it.
  absl::Status WaitUntilIdle() const;

 private:
  struct Replica {
    std::shared_ptr<runtime::LazyContext> context;
    std::vector<runtime::Tensor> params;
    std::vector<runtime::Tensor> velocity;  // created by the first step
    runtime::Tensor loss;                   // the mean over the replica's slice
    int examples = 0;                       // in that slice
  };

  explicit Trainer(const TrainerOptions& options) : options_(options) {}
  // x: f32[n, 1, 28, 28] -> log probabilities f32[n, 10].
  runtime::Tensor Forward(const Replica& replica, const runtime::Tensor& x,
                          bool training) const;
  // Each replica's slice of a batch of images (`sizes` from SplitEvenly),
  // transferred to its device.
  absl::StatusOr<std::vector<runtime::Tensor>> ScatterImages(
      absl::Span<const float> images, const std::vector<int>& sizes) const;
  // Makes grads[r][p] every replica's reduced gradient of parameter p: the
  // weighted sum over every process's replicas, or the mean over this
  // process's devices.
  absl::Status ReduceGradients(
      std::vector<std::vector<runtime::Tensor>>& grads);
  // PyTorch's SGD with momentum on each replica's parameters.
  void ApplySgd(const std::vector<std::vector<runtime::Tensor>>& grads);
  // The slices of a batch of n images, or an error when a replica would
  // get none.
  absl::StatusOr<std::vector<int>> Slices(int n) const;

  TrainerOptions options_;
  std::vector<Replica> replicas_;
  // Images in the last step's batch over every process.
  int64_t job_examples_ = 0;
};

}  // namespace podscope::mnist

#endif  // PODSCOPE_EXAMPLES_MNIST_TRAINER_H_
