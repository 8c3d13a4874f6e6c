// PyTorch/XLA-style lazy tensors. Tensor ops are recorded into their
// context's pending step and run at LazyContext::Sync (mark_step) or when a
// value is read; a shape error rides in the resulting tensor's status() and
// in every tensor computed from it instead of stopping the program.
#ifndef PODSCOPE_RUNTIME_LAZY_LAZY_H_
#define PODSCOPE_RUNTIME_LAZY_LAZY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/ir/literal.h"
#include "podscope/runtime/ir/shape.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::runtime {

class Communicator;
class LazyContext;
class Mesh;
class SpmdProgram;
namespace internal {
struct SpmdLazyState;
struct TensorImpl;
}  // namespace internal

// A value on a device, PyTorch/XLA style: ops on tensors are recorded into
// the context's pending step graph and run at the step boundary
// (LazyContext::Sync, the analogue of mark_step) or when a value is read.
// Copies share the same value. Shape errors do not stop the program: the
// resulting tensor carries the error in status(), and so does every tensor
// computed from it.
class Tensor {
 public:
  Tensor() = default;

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  absl::Status status() const;
  // True while the value is recorded but not yet computed by a step.
  bool is_pending() const;
  LazyContext* context() const;

  // Reads the value to the host; runs the pending step first if needed.
  absl::StatusOr<Literal> ToLiteral() const;
  template <typename T>
  absl::StatusOr<std::vector<T>> ToVector() const {
    absl::StatusOr<Literal> literal = ToLiteral();
    if (!literal.ok()) return literal.status();
    if (literal->shape().element_type() != ElementTypeOf<T>::value) {
      return absl::InvalidArgumentError(
          "Tensor::ToVector: element type mismatch with " +
          literal->shape().ToString());
    }
    return literal->ToVector<T>();
  }
  // The single f32 element of a scalar tensor.
  absl::StatusOr<float> Item() const;

  explicit Tensor(std::shared_ptr<internal::TensorImpl> impl)
      : impl_(std::move(impl)) {}
  const std::shared_ptr<internal::TensorImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<internal::TensorImpl> impl_;
};

// Owns the pending step graph of one device. Not thread-safe: use one
// context per thread, as with one PyTorch/XLA device per process thread.
class LazyContext : public std::enable_shared_from_this<LazyContext> {
 public:
  static absl::StatusOr<std::shared_ptr<LazyContext>> Create(Client* client,
                                                             Device* device);
  // SPMD (spmd.h, after UseSpmd()): one context for every device of
  // `mesh`, as the seed's SPMD mode presents the whole mesh as one device.
  // Tensors hold global values, sharded on the mesh's devices; MarkSharding
  // on a tensor places it (a value read into a step is resharded to its
  // annotation; a step's output is computed with it). Sync partitions the
  // step's graph with those shardings (once per graph and shardings:
  // later steps reuse the program) and runs it on every device of the mesh,
  // across processes through `communicator` (one rank per process; null
  // when every mesh device is local). Reading a value gathers it.
  // ToDevice, FromBuffer and AllReduceMean are for per-device contexts.
  static absl::StatusOr<std::shared_ptr<LazyContext>> CreateSpmd(
      Client* client, std::shared_ptr<const Mesh> mesh,
      Communicator* communicator = nullptr);
  ~LazyContext();

  Client* client() const { return client_; }
  // The device (SPMD: the first of the mesh's devices this process holds).
  Device* device() const { return device_; }
  // SPMD: the mesh, else null; how many programs Sync has partitioned.
  const Mesh* mesh() const;
  int64_t spmd_partitions() const;
  // SPMD: the program the last Sync ran (its shardings, inserted
  // collectives and per-device programs), else null.
  std::shared_ptr<const SpmdProgram> last_spmd_program() const;

  // Starts an asynchronous transfer; the tensor is usable at once.
  Tensor FromLiteral(const Literal& literal);
  template <typename T>
  Tensor FromVector(std::vector<int64_t> dims, const std::vector<T>& values) {
    absl::StatusOr<Literal> literal =
        Literal::FromVector<T>(std::move(dims), values);
    if (!literal.ok()) return ErrorTensor(literal.status());
    return FromLiteral(*literal);
  }
  // A tensor for a buffer that already lives on this context's device.
  Tensor FromBuffer(BufferPtr buffer);
  // A constant recorded into the step graph.
  Tensor Full(const Shape& shape, float value);
  Tensor ErrorTensor(absl::Status status);

  // Randomness (Dropout): step s draws from a seed derived from (seed, s),
  // so a run is reproducible and each step draws new masks without
  // recompiling. Like torch.manual_seed; the default seed is 0. Give each
  // device's context its own seed for independent masks per replica.
  void SetSeed(uint64_t seed) { seed_ = seed; }
  uint64_t seed() const { return seed_; }
  // The current step's seed, an i32 scalar; the first use in a step
  // transfers it to the device, later uses in the step share it.
  Tensor StepSeed();

  // The step boundary: compiles (or reuses) the executable for everything
  // recorded since the last step that a live tensor still refers to,
  // dispatches it to the device and returns without waiting for it.
  absl::Status Sync();
  int64_t step_count() const { return step_count_; }
  // Fingerprint of the graph run by the most recent Sync (0 if none).
  uint64_t last_graph_fingerprint() const { return last_fingerprint_; }

  // Recording interface used by the tensor ops.
  GraphBuilder& builder() { return *builder_; }
  // The value of `tensor` in the pending graph; materialized tensors become
  // parameters bound to their buffers.
  absl::StatusOr<Value> Lower(const Tensor& tensor);
  // Wraps a freshly recorded value (or the builder's error) as a tensor.
  Tensor Wrap(Value value);

 private:
  friend class Tensor;  // reads SPMD values
  LazyContext(Client* client, Device* device);

  Client* client_;
  Device* device_;
  std::unique_ptr<GraphBuilder> builder_;
  int64_t generation_ = 0;
  std::vector<std::weak_ptr<internal::TensorImpl>> pending_;
  std::vector<BufferPtr> parameter_buffers_;
  std::vector<std::pair<const Buffer*, Value>> parameter_of_buffer_;
  uint64_t seed_ = 0;
  BufferPtr step_seed_;  // this step's StepSeed(), once used
  std::unique_ptr<internal::SpmdLazyState> spmd_;  // null: one device
  int64_t step_count_ = 0;
  uint64_t last_fingerprint_ = 0;
};

// Elementwise ops broadcast NumPy-style.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, float b);
Tensor operator-(const Tensor& a, float b);
Tensor operator*(const Tensor& a, float b);
Tensor operator/(const Tensor& a, float b);
Tensor operator*(float a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor Maximum(const Tensor& a, const Tensor& b);
Tensor Exp(const Tensor& x);
Tensor Log(const Tensor& x);
Tensor Tanh(const Tensor& x);
Tensor Relu(const Tensor& x);
Tensor Compare(const Tensor& a, const Tensor& b, CompareDirection direction);
Tensor Where(const Tensor& pred, const Tensor& on_true, const Tensor& on_false);
Tensor Cast(const Tensor& x, ElementType type);

Tensor Reshape(const Tensor& x, std::vector<int64_t> dims);
// Collapses dimensions [start_dim, rank) into one, like torch.flatten.
Tensor Flatten(const Tensor& x, int64_t start_dim = 1);
Tensor Transpose(const Tensor& x, std::vector<int64_t> permutation);
Tensor Slice(const Tensor& x, std::vector<int64_t> starts,
             std::vector<int64_t> limits);
Tensor Concat(absl::Span<const Tensor> xs, int64_t axis);
Tensor BroadcastTo(const Tensor& x, std::vector<int64_t> dims);

Tensor Sum(const Tensor& x, std::vector<int64_t> axes, bool keep_dims = false);
Tensor Mean(const Tensor& x, std::vector<int64_t> axes, bool keep_dims = false);
Tensor ReduceMax(const Tensor& x, std::vector<int64_t> axes,
                 bool keep_dims = false);
Tensor ArgMax(const Tensor& x, int64_t axis, bool keep_dims = false);

Tensor Matmul(const Tensor& a, const Tensor& b);
Tensor Conv2D(const Tensor& input, const Tensor& weights, Hw stride = {1, 1},
              Hw padding = {0, 0});
Tensor MaxPool2D(const Tensor& input, Hw window, Hw stride = {0, 0},
                 Hw padding = {0, 0});
Tensor Softmax(const Tensor& x, int64_t axis = -1);
Tensor LogSoftmax(const Tensor& x, int64_t axis = -1);
Tensor NllLoss(const Tensor& log_probs, const Tensor& labels);
Tensor CrossEntropyLoss(const Tensor& logits, const Tensor& labels);

// Training-mode inverted dropout (GraphBuilder::Dropout) with x's
// context's step seed; rate 0 returns x. Dropouts of one step draw
// different masks.
Tensor Dropout(const Tensor& x, float rate);

// Gradients of the scalar `loss` with respect to each of `wrt`, recorded
// into the same pending step.
absl::StatusOr<std::vector<Tensor>> Grad(const Tensor& loss,
                                         absl::Span<const Tensor> wrt);

// Several devices in one process (one context each, driven from one
// thread). ToDevice copies `x` to `ctx`'s device, like torch's x.to(device):
// a pending x is computed first (its context's step ends, as reading a
// value does); the copy runs on the destination's stream after x is ready.
Tensor ToDevice(const Tensor& x, LazyContext& ctx);

// The mean of `replicas` (one tensor per device, one shape), on each of
// their devices: result[i] lives where replicas[i] does. Every device adds
// the replicas in the same order, so the results are bitwise equal; data-
// parallel training averages gradients with it to keep replicas in step.
absl::StatusOr<std::vector<Tensor>> AllReduceMean(
    absl::Span<const Tensor> replicas);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_LAZY_LAZY_H_
