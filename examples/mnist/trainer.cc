#include "mnist/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "mnist/data.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/ir/scope.h"

namespace podscope::mnist {
namespace {

namespace rt = podscope::runtime;

// PyTorch's default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
rt::Literal Init(std::vector<int64_t> dims, int64_t fan_in, std::mt19937& rng) {
  rt::Literal literal(rt::F32Shape(std::move(dims)));
  const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  std::uniform_real_distribution<float> dist(-bound, bound);
  for (float& v : literal.mutable_data<float>()) v = dist(rng);
  return literal;
}

}  // namespace

std::vector<rt::Literal> InitialParameters(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<rt::Literal> params;
  params.push_back(Init({32, 1, 3, 3}, 1 * 9, rng));
  params.push_back(Init({32}, 1 * 9, rng));
  params.push_back(Init({64, 32, 3, 3}, 32 * 9, rng));
  params.push_back(Init({64}, 32 * 9, rng));
  params.push_back(Init({9216, 128}, 9216, rng));
  params.push_back(Init({128}, 9216, rng));
  params.push_back(Init({128, kClasses}, 128, rng));
  params.push_back(Init({kClasses}, 128, rng));
  return params;
}

std::vector<int> SplitEvenly(int n, int parts) {
  std::vector<int> sizes(std::max(parts, 0), 0);
  for (int i = 0; i < parts; ++i) sizes[i] = n / parts + (i < n % parts);
  return sizes;
}

absl::StatusOr<std::vector<int>> Trainer::Slices(int n) const {
  if (n < num_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a batch of ", n, " images cannot give each of ", num_replicas(),
        " devices an image (pass at least ", num_replicas(), ")"));
  }
  return SplitEvenly(n, num_replicas());
}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(
    rt::Client* client, absl::Span<rt::Device* const> devices,
    const TrainerOptions& options) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("Trainer: no devices");
  }
  std::unique_ptr<Trainer> trainer(new Trainer(options));
  const std::vector<rt::Literal> initial = InitialParameters(options.seed);
  // Dropout seeds differ across every replica of the job.
  const uint64_t first_replica =
      options.communicator == nullptr
          ? 0
          : uint64_t(options.communicator->rank()) * devices.size();
  for (size_t r = 0; r < devices.size(); ++r) {
    PODSCOPE_ASSIGN_OR_RETURN(auto context,
                              rt::LazyContext::Create(client, devices[r]));
    Replica replica;
    replica.context = std::move(context);
    replica.context->SetSeed(uint64_t{options.seed} + first_replica + r);
    for (const rt::Literal& literal : initial) {
      replica.params.push_back(replica.context->FromLiteral(literal));
    }
    trainer->replicas_.push_back(std::move(replica));
  }
  if (options.communicator != nullptr) {
    PODSCOPE_TRACE("broadcast_master_params");
    std::vector<std::vector<rt::Tensor>*> lists;
    for (Replica& replica : trainer->replicas_) {
      lists.push_back(&replica.params);
    }
    absl::Status s = rt::BroadcastMasterParams(*options.communicator, lists);
    if (!s.ok()) return s;
  }
  return trainer;
}

rt::Tensor Trainer::Forward(const Replica& replica, const rt::Tensor& x,
                            bool training) const {
  rt::ScopedName forward("forward");
  const auto& p = replica.params;
  const float conv_dropout = training ? options_.conv_dropout : 0.0f;
  const float fc_dropout = training ? options_.fc_dropout : 0.0f;
  rt::Tensor h;
  {
    rt::ScopedName s("conv1");
    h = rt::Relu(rt::Conv2D(x, p[0]) + rt::Reshape(p[1], {1, 32, 1, 1}));
  }
  {
    rt::ScopedName s("conv2");
    h = rt::Relu(rt::Conv2D(h, p[2]) + rt::Reshape(p[3], {1, 64, 1, 1}));
  }
  {
    rt::ScopedName s("pool");
    h = rt::Flatten(rt::Dropout(rt::MaxPool2D(h, {2, 2}), conv_dropout));
  }
  {
    rt::ScopedName s("fc1");
    h = rt::Dropout(rt::Relu(rt::Matmul(h, p[4]) + p[5]), fc_dropout);
  }
  rt::ScopedName s("fc2");
  return rt::LogSoftmax(rt::Matmul(h, p[6]) + p[7], 1);
}

absl::StatusOr<std::vector<rt::Tensor>> Trainer::ScatterImages(
    absl::Span<const float> images, const std::vector<int>& sizes) const {
  std::vector<rt::Tensor> slices;
  size_t offset = 0;
  for (int r = 0; r < num_replicas(); ++r) {
    rt::Literal literal(rt::F32Shape({sizes[r], 1, kRows, kCols}));
    std::memcpy(literal.mutable_data<float>().data(), images.data() + offset,
                size_t(sizes[r]) * kPixels * sizeof(float));
    offset += size_t(sizes[r]) * kPixels;
    slices.push_back(replicas_[r].context->FromLiteral(literal));
  }
  return slices;
}

absl::Status Trainer::Step(absl::Span<const float> images,
                           absl::Span<const int32_t> labels) {
  if (images.size() != labels.size() * kPixels) {
    return absl::InvalidArgumentError(
        absl::StrCat("Trainer::Step: ", images.size(), " pixels for ",
                     labels.size(), " labels"));
  }
  const int n = static_cast<int>(labels.size());
  PODSCOPE_ASSIGN_OR_RETURN(auto sizes, Slices(n));
  job_examples_ = n;
  if (options_.communicator != nullptr) {
    // The processes' batches may differ: each replica's gradient is
    // weighted by its share of every process's images.
    PODSCOPE_TRACE("count_examples");
    int32_t count = n;
    absl::Status s = options_.communicator->AllReduce(absl::MakeSpan(&count, 1),
                                                      rt::ReduceOp::kSum);
    if (!s.ok()) return s;
    job_examples_ = count;
  }
  PODSCOPE_ASSIGN_OR_RETURN(auto inputs, ScatterImages(images, sizes));
  std::vector<std::vector<rt::Tensor>> grads;
  int first = 0;
  for (int r = 0; r < num_replicas(); ++r) {
    PODSCOPE_TRACE("forward_backward", "replica", r);
    Replica& replica = replicas_[r];
    const int examples = sizes[r];
    rt::Tensor target = replica.context->FromVector<int32_t>(
        {examples}, std::vector<int32_t>(labels.begin() + first,
                                         labels.begin() + first + examples));
    first += examples;
    rt::Tensor output = Forward(replica, inputs[r], /*training=*/true);
    rt::ScopedName backward("backward");
    replica.loss = rt::NllLoss(output, target);
    replica.examples = examples;
    // The reduction below means (within a process) or sums (across
    // processes) the replicas' gradients; this weight makes the result the
    // mean over every image rather than over the slices, which differ.
    const float weight =
        options_.communicator != nullptr
            ? float(examples) / float(job_examples_)
            : float(examples) * float(num_replicas()) / float(n);
    rt::Tensor objective =
        weight == 1.0f ? replica.loss : replica.loss * weight;
    PODSCOPE_ASSIGN_OR_RETURN(auto g, rt::Grad(objective, replica.params));
    grads.push_back(std::move(g));
  }
  PODSCOPE_RETURN_IF_ERROR(ReduceGradients(grads));
  ApplySgd(grads);
  for (Replica& replica : replicas_) {
    PODSCOPE_TRACE("sync");
    if (absl::Status s = replica.context->Sync(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Trainer::ReduceGradients(
    std::vector<std::vector<rt::Tensor>>& grads) {
  if (options_.communicator != nullptr) {
    // One all-reduce per parameter: the process's devices are summed
    // in-process, then across processes; the weights make the sum the
    // mean over every image.
    for (Replica& replica : replicas_) {
      PODSCOPE_TRACE("sync_gradients");
      if (absl::Status s = replica.context->Sync(); !s.ok()) return s;
    }
    PODSCOPE_TRACE("all_reduce_gradients");
    for (size_t p = 0; p < grads[0].size(); ++p) {
      std::vector<rt::Tensor> per_replica;
      for (const auto& g : grads) per_replica.push_back(g[p]);
      PODSCOPE_ASSIGN_OR_RETURN(
          auto means, rt::AllReduce(*options_.communicator, per_replica,
                                    rt::ReduceOp::kSum));
      for (int r = 0; r < num_replicas(); ++r) grads[r][p] = means[r];
    }
  } else if (num_replicas() > 1) {
    // Every device computes its gradients before any of them is copied.
    for (Replica& replica : replicas_) {
      PODSCOPE_TRACE("sync_gradients");
      if (absl::Status s = replica.context->Sync(); !s.ok()) return s;
    }
    PODSCOPE_TRACE("all_reduce_gradients");
    rt::ScopedName all_reduce("all_reduce");
    for (size_t p = 0; p < grads[0].size(); ++p) {
      std::vector<rt::Tensor> per_replica;
      for (const auto& g : grads) per_replica.push_back(g[p]);
      PODSCOPE_ASSIGN_OR_RETURN(auto means, rt::AllReduceMean(per_replica));
      for (int r = 0; r < num_replicas(); ++r) grads[r][p] = means[r];
    }
  }
  return absl::OkStatus();
}

void Trainer::ApplySgd(const std::vector<std::vector<rt::Tensor>>& grads) {
  for (int r = 0; r < num_replicas(); ++r) {
    PODSCOPE_TRACE("optimizer", "replica", r);
    rt::ScopedName optimizer("optimizer");
    Replica& replica = replicas_[r];
    // PyTorch's SGD: v = momentum * v + g; w -= lr * v (v = g at first).
    const bool first = replica.velocity.empty();
    for (size_t i = 0; i < replica.params.size(); ++i) {
      if (first) {
        replica.velocity.push_back(grads[r][i]);
      } else {
        replica.velocity[i] =
            replica.velocity[i] * options_.momentum + grads[r][i];
      }
      replica.params[i] =
          replica.params[i] - replica.velocity[i] * options_.learning_rate;
    }
  }
}

absl::StatusOr<float> Trainer::LastLoss() const {
  // Each slice's mean weighted by its images: the mean over every image.
  double sum = 0;
  for (const Replica& replica : replicas_) {
    if (!replica.loss.defined()) {
      return absl::FailedPreconditionError("Trainer: no step has run");
    }
    PODSCOPE_ASSIGN_OR_RETURN(auto loss, replica.loss.Item());
    sum += double(loss) * replica.examples;
  }
  float total = static_cast<float>(sum);
  if (options_.communicator != nullptr) {
    absl::Status s = options_.communicator->AllReduce(absl::MakeSpan(&total, 1),
                                                      rt::ReduceOp::kSum);
    if (!s.ok()) return s;
  }
  return static_cast<float>(double(total) / double(job_examples_));
}

absl::StatusOr<std::vector<int>> Trainer::Predict(
    absl::Span<const float> images) {
  PODSCOPE_ASSIGN_OR_RETURN(auto sizes,
                            Slices(static_cast<int>(images.size() / kPixels)));
  PODSCOPE_ASSIGN_OR_RETURN(auto inputs, ScatterImages(images, sizes));
  std::vector<rt::Tensor> outputs;
  for (int r = 0; r < num_replicas(); ++r) {
    outputs.push_back(Forward(replicas_[r], inputs[r], /*training=*/false));
  }
  for (Replica& replica : replicas_) {
    if (absl::Status s = replica.context->Sync(); !s.ok()) return s;
  }
  std::vector<int> predicted;
  for (const rt::Tensor& output : outputs) {
    PODSCOPE_ASSIGN_OR_RETURN(auto values, output.ToVector<float>());
    for (size_t row = 0; row < values.size() / kClasses; ++row) {
      const float* v = values.data() + row * kClasses;
      predicted.push_back(
          static_cast<int>(std::max_element(v, v + kClasses) - v));
    }
  }
  return predicted;
}

absl::Status Trainer::WaitUntilIdle() const {
  absl::Status status;
  for (const Replica& replica : replicas_) {
    status.Update(replica.context->device()->WaitUntilIdle());
  }
  return status;
}

}  // namespace podscope::mnist
