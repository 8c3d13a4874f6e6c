// LazyContext and Tensor: recording into the pending step graph and
// running it at the step boundary.

#include "podscope/runtime/lazy/lazy.h"

#include "absl/strings/str_cat.h"
#include "collectives/journal.h"
#include "instrumentation.h"
#include "lazy/lazy_internal.h"
#include "lazy/lazy_spmd.h"
#include "metrics_internal.h"
#include "podscope/base/status_macros.h"

namespace podscope::runtime {

using internal::TensorImpl;

namespace {
const Shape& EmptyShape() {
  static const Shape* const shape = new Shape();
  return *shape;
}
}  // namespace

const Shape& Tensor::shape() const {
  return impl_ == nullptr ? EmptyShape() : impl_->shape;
}

absl::Status Tensor::status() const {
  if (impl_ == nullptr) {
    return absl::FailedPreconditionError("Tensor: undefined tensor");
  }
  return impl_->status;
}

bool Tensor::is_pending() const {
  return impl_ != nullptr && impl_->status.ok() && !impl_->materialized();
}

LazyContext* Tensor::context() const {
  return impl_ == nullptr ? nullptr : impl_->context.get();
}

absl::StatusOr<Literal> Tensor::ToLiteral() const {
  PODSCOPE_RETURN_IF_ERROR(this->status());
  if (!impl_->materialized()) {
    // Reading a value ends the step, as .item() does in PyTorch/XLA.
    PODSCOPE_RETURN_IF_ERROR(impl_->context->Sync());
    PODSCOPE_RETURN_IF_ERROR(impl_->status);
  }
  if (impl_->sharded != nullptr) {
    return impl_->context->spmd_->executor->Gather(*impl_->sharded);
  }
  return impl_->buffer->ToLiteral().Await();
}

absl::StatusOr<float> Tensor::Item() const {
  PODSCOPE_ASSIGN_OR_RETURN(Literal literal, ToLiteral());
  if (literal.shape() != F32Shape({})) {
    return absl::InvalidArgumentError(
        absl::StrCat("Tensor::Item: expected an f32 scalar, got ",
                     literal.shape().ToString()));
  }
  return literal.data<float>()[0];
}

absl::StatusOr<std::shared_ptr<LazyContext>> LazyContext::Create(
    Client* client, Device* device) {
  if (client == nullptr || device == nullptr || !device->addressable()) {
    return absl::InvalidArgumentError(
        "LazyContext: needs a client and one of its addressable devices");
  }
  return std::shared_ptr<LazyContext>(new LazyContext(client, device));
}

LazyContext::LazyContext(Client* client, Device* device)
    : client_(client),
      device_(device),
      builder_(std::make_unique<GraphBuilder>("step")) {}

LazyContext::~LazyContext() = default;

Tensor LazyContext::ErrorTensor(absl::Status status) {
  auto impl = std::make_shared<TensorImpl>();
  impl->context = shared_from_this();
  impl->status = std::move(status);
  return Tensor(std::move(impl));
}

Tensor LazyContext::FromLiteral(const Literal& literal) {
  if (spmd_ != nullptr) {
    absl::StatusOr<std::shared_ptr<ShardedValue>> sharded =
        internal::SpmdFromLiteral(*spmd_, literal);
    if (!sharded.ok()) return ErrorTensor(sharded.status());
    auto impl = std::make_shared<TensorImpl>();
    impl->context = shared_from_this();
    impl->shape = literal.shape();
    impl->sharded = *std::move(sharded);
    return Tensor(std::move(impl));
  }
  absl::StatusOr<BufferPtr> buffer =
      client_->BufferFromLiteral(literal, device_);
  if (!buffer.ok()) return ErrorTensor(buffer.status());
  return FromBuffer(*std::move(buffer));
}

Tensor LazyContext::FromBuffer(BufferPtr buffer) {
  if (spmd_ != nullptr) {
    return ErrorTensor(absl::InvalidArgumentError(
        "FromBuffer: an SPMD context holds values sharded over its mesh; "
        "use FromLiteral"));
  }
  if (buffer == nullptr || buffer->device() != device_) {
    return ErrorTensor(absl::InvalidArgumentError(absl::StrCat(
        "FromBuffer: the buffer lives on ",
        buffer == nullptr ? "no device" : buffer->device()->ToString(),
        ", not on ", device_->ToString())));
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->context = shared_from_this();
  impl->shape = buffer->shape();
  impl->buffer = std::move(buffer);
  return Tensor(std::move(impl));
}

Tensor LazyContext::StepSeed() {
  if (spmd_ != nullptr) {
    const uint64_t hash =
        StableHash64(absl::StrCat("step seed ", seed_, " ", step_count_));
    return FromLiteral(Literal::ScalarI32(static_cast<int32_t>(hash >> 32)));
  }
  if (step_seed_ == nullptr) {
    const uint64_t hash =
        StableHash64(absl::StrCat("step seed ", seed_, " ", step_count_));
    absl::StatusOr<BufferPtr> buffer = client_->BufferFromLiteral(
        Literal::ScalarI32(static_cast<int32_t>(hash >> 32)), device_);
    if (!buffer.ok()) return ErrorTensor(buffer.status());
    step_seed_ = *std::move(buffer);
  }
  return FromBuffer(step_seed_);
}

Tensor LazyContext::Full(const Shape& shape, float value) {
  return Wrap(builder_->Full(shape, value));
}

Tensor LazyContext::Wrap(Value value) {
  if (!value.valid()) {
    absl::Status status = builder_->TakeStatus();
    if (status.ok()) status = absl::InternalError("op produced no value");
    return ErrorTensor(std::move(status));
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->context = shared_from_this();
  impl->shape = builder_->shape(value);
  impl->generation = generation_;
  impl->value = value;
  pending_.push_back(impl);
  return Tensor(std::move(impl));
}

absl::StatusOr<Value> LazyContext::Lower(const Tensor& tensor) {
  if (!tensor.defined()) {
    return absl::InvalidArgumentError("lazy op: undefined tensor operand");
  }
  TensorImpl& impl = *tensor.impl();
  if (impl.context.get() != this) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lazy op: operand lives on ",
        impl.context == nullptr ? "no device"
                                : impl.context->device()->ToString(),
        ", not on ", device_->ToString()));
  }
  PODSCOPE_RETURN_IF_ERROR(impl.status);
  if (!impl.materialized()) {
    if (impl.generation != generation_) {
      return absl::InternalError("lazy op: operand from an abandoned step");
    }
    return impl.value;
  }
  if (impl.sharded != nullptr && spmd_ != nullptr) {
    for (const auto& [value, parameter] : spmd_->parameter_of_value) {
      if (value == impl.sharded.get()) return parameter;
    }
    Value parameter = builder_->Parameter(impl.shape);
    spmd_->parameters.push_back(impl.sharded);
    spmd_->parameter_shardings.push_back(
        impl.sharding != nullptr ? *impl.sharding : impl.sharded->sharding);
    spmd_->parameter_of_value.emplace_back(impl.sharded.get(), parameter);
    return parameter;
  }
  for (const auto& [buffer, value] : parameter_of_buffer_) {
    if (buffer == impl.buffer.get()) return value;
  }
  Value parameter = builder_->Parameter(impl.shape);
  parameter_buffers_.push_back(impl.buffer);
  parameter_of_buffer_.emplace_back(impl.buffer.get(), parameter);
  return parameter;
}

absl::Status LazyContext::Sync() {
  std::vector<std::shared_ptr<TensorImpl>> live;
  for (const auto& weak : pending_) {
    std::shared_ptr<TensorImpl> impl = weak.lock();
    if (impl != nullptr && impl->status.ok() && !impl->materialized() &&
        impl->generation == generation_) {
      live.push_back(std::move(impl));
    }
  }
  absl::Status status;
  uint64_t fingerprint = 0;
  if (!live.empty()) {
    std::vector<Value> outputs;
    for (const auto& impl : live) outputs.push_back(impl->value);
    absl::StatusOr<std::vector<BufferPtr>> results;
    absl::StatusOr<Graph> graph = builder_->Build(outputs);
    if (spmd_ != nullptr) {
      status = internal::SpmdSyncStep(*spmd_, graph, live, step_count_,
                                      &fingerprint);
    } else if (graph.ok()) {
      fingerprint = graph->fingerprint();
      internal::ScopedLazyStep compiling_step(step_count_);
      absl::StatusOr<std::shared_ptr<Executable>> executable =
          client_->Compile(*graph);
      results = executable.ok()
                    ? (*executable)->Execute(parameter_buffers_, device_)
                    : executable.status();
    } else {
      results = graph.status();
    }
    if (spmd_ == nullptr) {
      status = results.status();
      for (size_t i = 0; i < live.size(); ++i) {
        if (results.ok()) {
          live[i]->buffer = (*results)[i];
        } else {
          live[i]->status = status;
        }
        live[i]->generation = -1;
      }
    }
  }
  ++step_count_;
  last_fingerprint_ = fingerprint;
  internal::IncrementCounter(internal::kStepCount);
  internal::CollectiveJournal::Get().NoteStep(step_count_);
  if (internal::ObserverActive()) {
    internal::Observer().OnStep(
        {device_, step_count_, fingerprint, internal::NowNs()});
  }
  builder_ = std::make_unique<GraphBuilder>("step");
  ++generation_;
  pending_.clear();
  parameter_buffers_.clear();
  parameter_of_buffer_.clear();
  if (spmd_ != nullptr) {
    spmd_->parameters.clear();
    spmd_->parameter_shardings.clear();
    spmd_->parameter_of_value.clear();
  }
  step_seed_ = nullptr;
  return status;
}

}  // namespace podscope::runtime
