#include "mnist/spmd_trainer.h"

#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "mnist/data.h"
#include "mnist/trainer.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/ir/autodiff.h"
#include "podscope/runtime/ir/builder.h"

namespace podscope::mnist {
namespace {

namespace rt = podscope::runtime;

constexpr int kNumParams = 8;

// The step program: the seed's forward pass and loss, its gradients, and
// SGD with momentum. Parameters: input, labels, the weights, their
// momentum; outputs: loss, new weights, new momentum.
absl::StatusOr<rt::Graph> BuildStepGraph(
    int64_t b, const std::vector<rt::Literal>& initial,
    const SpmdTrainerOptions& options) {
  rt::GraphBuilder g("mnist_spmd_step");
  rt::Value x = g.Parameter(rt::F32Shape({b, 1, kRows, kCols}));
  rt::Value labels = g.Parameter(rt::I32Shape({b}));
  std::vector<rt::Value> w, v;
  for (const rt::Literal& l : initial) w.push_back(g.Parameter(l.shape()));
  for (const rt::Literal& l : initial) v.push_back(g.Parameter(l.shape()));
  rt::Value h;
  {
    rt::Value c = g.Conv2D(x, w[0]);
    h = g.Relu(g.Add(c, g.Broadcast(w[1], g.shape(c).dims(), {1})));
    c = g.Conv2D(h, w[2]);
    h = g.Relu(g.Add(c, g.Broadcast(w[3], g.shape(c).dims(), {1})));
    h = g.Reshape(g.MaxPool2D(h, {2, 2}), {b, 9216});
    rt::Value f = g.Dot(h, w[4]);
    h = g.Relu(g.Add(f, g.Broadcast(w[5], g.shape(f).dims(), {1})));
    f = g.Dot(h, w[6]);
    h = g.LogSoftmax(g.Add(f, g.Broadcast(w[7], g.shape(f).dims(), {1})), 1);
  }
  rt::Value loss = g.NllLoss(h, labels);
  PODSCOPE_ASSIGN_OR_RETURN(auto grads, rt::Grad(g, loss, w));
  std::vector<rt::Value> outputs = {loss};
  std::vector<rt::Value> new_v;
  for (int i = 0; i < kNumParams; ++i) {
    const rt::Shape s = g.shape(w[i]);
    rt::Value vi = g.Add(g.Mul(v[i], g.Full(s, options.momentum)), grads[i]);
    new_v.push_back(vi);
    outputs.push_back(g.Sub(w[i], g.Mul(vi, g.Full(s, options.learning_rate))));
  }
  for (rt::Value vi : new_v) outputs.push_back(vi);
  return g.Build(outputs);
}

}  // namespace

const std::vector<std::string>& SpmdTrainer::ParameterNames() {
  static const auto* names = new std::vector<std::string>{
      "conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
      "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias"};
  return *names;
}

absl::StatusOr<std::unique_ptr<SpmdTrainer>> SpmdTrainer::Create(
    rt::Client* client, int batch_size, const SpmdTrainerOptions& options) {
  const int n = client->device_count();
  // The seed's meshes pair the devices; an odd number of them (3 ranks of
  // one device) gets a second axis of size 1, so any job runs.
  const int pair = n % 2 == 0 ? 2 : 1;
  if (batch_size <= 0) {
    return absl::InvalidArgumentError("SpmdTrainer: batch size must be > 0");
  }
  rt::UseSpmd();
  std::unique_ptr<SpmdTrainer> t(new SpmdTrainer());
  t->client_ = client;
  t->batch_size_ = batch_size;
  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i;
  PODSCOPE_ASSIGN_OR_RETURN(
      auto conv, rt::Mesh::Create(ids, {n / pair, pair, 1, 1},
                                  {"data", "dim1", "dim2", "dim3"}, *client));
  PODSCOPE_ASSIGN_OR_RETURN(
      auto linear,
      rt::Mesh::Create(ids, {n / pair, pair}, {"data", "model"}, *client));
  t->conv_mesh_ = std::make_shared<const rt::Mesh>(std::move(conv));
  t->linear_mesh_ = std::make_shared<const rt::Mesh>(std::move(linear));

  const std::vector<rt::Literal> initial = InitialParameters(options.seed);
  PODSCOPE_ASSIGN_OR_RETURN(auto graph,
                            BuildStepGraph(batch_size, initial, options));
  if (absl::Status s = t->PartitionStep(graph); !s.ok()) return s;
  PODSCOPE_ASSIGN_OR_RETURN(
      auto executor,
      rt::SpmdExecutor::Create(client, t->conv_mesh_, options.communicator));
  t->executor_ = std::move(executor);
  for (int i = 0; i < kNumParams; ++i) {
    PODSCOPE_ASSIGN_OR_RETURN(
        auto p, t->executor_->Shard(initial[i],
                                    t->program_->parameter_sharding(2 + i)));
    t->params_.push_back(std::move(p));
    PODSCOPE_ASSIGN_OR_RETURN(
        auto zero,
        t->executor_->Shard(rt::Literal(initial[i].shape()),
                            t->program_->parameter_sharding(10 + i)));
    t->velocity_.push_back(std::move(zero));
  }
  return t;
}

absl::Status SpmdTrainer::PartitionStep(const rt::Graph& graph) {
  // The seed's shardings.
  auto on = [](const std::shared_ptr<const rt::Mesh>& mesh,
               const rt::PartitionSpec& spec) {
    return rt::Sharding::Create(mesh, spec, static_cast<int>(spec.size()));
  };
  std::vector<absl::StatusOr<rt::Sharding>> specs = {
      on(conv_mesh_, {{"data"}, {}, {}, {}}),  on(conv_mesh_, {{}}),
      on(conv_mesh_, {{"data"}, {}, {}, {}}),  on(conv_mesh_, {{}}),
      on(linear_mesh_, {{}, {"data"}}),        on(linear_mesh_, {{}}),
      on(linear_mesh_, {{"model"}, {"data"}}), on(linear_mesh_, {{}})};
  PODSCOPE_ASSIGN_OR_RETURN(auto input,
                            on(conv_mesh_, {{"data"}, {"dim1"}, {}, {}}));
  input_sharding_ = input;
  label_sharding_ = rt::Sharding::Replicated(conv_mesh_, 1);
  std::vector<std::optional<rt::Sharding>> shardings = {input_sharding_,
                                                        label_sharding_};
  std::map<int, rt::Sharding> annotations;
  for (int rep = 0; rep < 2; ++rep) {
    for (int i = 0; i < kNumParams; ++i) {
      if (!specs[i].ok()) return specs[i].status();
      shardings.push_back(*specs[i]);
      // The updated weights and momentum keep their weights' shardings.
      // (Build renumbers nodes: the outputs' ids are the graph's.)
      annotations.emplace(graph.outputs()[1 + rep * kNumParams + i], *specs[i]);
    }
  }
  std::vector<std::string> names = {"input", "target"};
  for (const std::string& name : ParameterNames()) names.push_back(name);
  for (const std::string& name : ParameterNames()) {
    names.push_back(name + ".momentum");
  }
  PODSCOPE_ASSIGN_OR_RETURN(
      auto program, rt::SpmdProgram::Partition(graph, conv_mesh_, shardings,
                                               annotations, names));
  program_ = std::move(program);
  return absl::OkStatus();
}

absl::Status SpmdTrainer::Step(absl::Span<const float> images,
                               absl::Span<const int32_t> labels) {
  if (static_cast<int>(labels.size()) != batch_size_ ||
      images.size() != labels.size() * kPixels) {
    return absl::InvalidArgumentError(
        absl::StrCat("SpmdTrainer::Step: ", images.size(), " pixels and ",
                     labels.size(), " labels for a batch of ", batch_size_));
  }
  std::vector<rt::ShardedValue> args;
  {
    PODSCOPE_TRACE("shard_input");
    PODSCOPE_ASSIGN_OR_RETURN(
        auto x,
        rt::Literal::FromVector<float>({batch_size_, 1, kRows, kCols}, images));
    PODSCOPE_ASSIGN_OR_RETURN(
        auto y, rt::Literal::FromVector<int32_t>({batch_size_}, labels));
    PODSCOPE_ASSIGN_OR_RETURN(auto xs, executor_->Shard(x, input_sharding_));
    PODSCOPE_ASSIGN_OR_RETURN(auto ys, executor_->Shard(y, label_sharding_));
    args.push_back(std::move(xs));
    args.push_back(std::move(ys));
  }
  for (const auto& p : params_) args.push_back(p);
  for (const auto& p : velocity_) args.push_back(p);
  PODSCOPE_ASSIGN_OR_RETURN(auto out, executor_->Execute(*program_, args));
  loss_ = out[0];
  for (int i = 0; i < kNumParams; ++i) {
    params_[i] = out[1 + i];
    velocity_[i] = out[1 + kNumParams + i];
  }
  return absl::OkStatus();
}

absl::StatusOr<float> SpmdTrainer::LastLoss() {
  // The loss is replicated: any local device holds all of it.
  for (const rt::BufferPtr& shard : loss_.shards) {
    if (shard == nullptr) continue;
    PODSCOPE_ASSIGN_OR_RETURN(auto literal, shard->ToLiteral().Await());
    return literal.data<float>()[0];
  }
  return absl::FailedPreconditionError("SpmdTrainer: no step has run");
}

absl::StatusOr<std::vector<rt::Literal>> SpmdTrainer::Parameters() {
  std::vector<rt::Literal> out;
  for (const auto& p : params_) {
    PODSCOPE_ASSIGN_OR_RETURN(auto l, executor_->Gather(p));
    out.push_back(std::move(l));
  }
  return out;
}

int64_t SpmdTrainer::CollectiveBytesPerStep() const {
  int64_t total = 0;
  for (const auto& c : program_->collectives()) total += c.bytes;
  return total;
}

int64_t SpmdTrainer::MinCollectiveBytesPerStep() const {
  int64_t total = 0;
  for (const auto& c : program_->collectives()) total += c.min_bytes;
  return total;
}

absl::Status SpmdTrainer::WaitUntilIdle() const {
  absl::Status status;
  for (rt::Device* d : client_->addressable_devices()) {
    status.Update(d->WaitUntilIdle());
  }
  return status;
}

}  // namespace podscope::mnist
