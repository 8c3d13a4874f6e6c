// Several devices in one process: copies between contexts and the mean of
// replicas that data-parallel training keeps its replicas in step with.

#include "absl/strings/str_cat.h"
#include "lazy/lazy_internal.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/lazy/lazy.h"

namespace podscope::runtime {

Tensor ToDevice(const Tensor& x, LazyContext& ctx) {
  if (!x.defined()) {
    return ctx.ErrorTensor(
        absl::InvalidArgumentError("ToDevice: undefined tensor"));
  }
  if (x.context() == &ctx) return x;
  if (!x.status().ok()) return ctx.ErrorTensor(x.status());
  if (x.is_pending()) {
    absl::Status status = x.context()->Sync();
    if (!status.ok()) return ctx.ErrorTensor(status);
    if (!x.status().ok()) return ctx.ErrorTensor(x.status());
  }
  const BufferPtr& source = x.impl()->buffer;
  if (source == nullptr) {
    return ctx.ErrorTensor(absl::FailedPreconditionError(
        "ToDevice: the tensor belongs to a step that was never run"));
  }
  absl::StatusOr<BufferPtr> copy = source->CopyToDevice(ctx.device());
  if (!copy.ok()) return ctx.ErrorTensor(copy.status());
  return ctx.FromBuffer(*std::move(copy));
}

absl::StatusOr<std::vector<Tensor>> AllReduceMean(
    absl::Span<const Tensor> replicas) {
  if (replicas.empty()) {
    return absl::InvalidArgumentError("AllReduceMean: no replicas");
  }
  for (size_t i = 0; i < replicas.size(); ++i) {
    const Tensor& r = replicas[i];
    if (!r.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("AllReduceMean: replica ", i, " is undefined"));
    }
    PODSCOPE_RETURN_IF_ERROR(r.status());
    if (r.shape() != replicas[0].shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AllReduceMean: replica ", i, " has shape ", r.shape().ToString(),
          " but replica 0 has ", replicas[0].shape().ToString()));
    }
  }
  if (replicas.size() == 1) return std::vector<Tensor>{replicas[0]};
  // Compute pending replicas first, so that no device's copy waits for a
  // step that is only dispatched after it.
  for (const Tensor& r : replicas) {
    if (!r.is_pending()) continue;
    PODSCOPE_RETURN_IF_ERROR(r.context()->Sync());
    PODSCOPE_RETURN_IF_ERROR(r.status());
  }
  const float scale = 1.0f / static_cast<float>(replicas.size());
  std::vector<Tensor> means;
  for (const Tensor& home : replicas) {
    LazyContext& ctx = *home.context();
    Tensor sum = ToDevice(replicas[0], ctx);
    for (size_t j = 1; j < replicas.size(); ++j) {
      sum = sum + ToDevice(replicas[j], ctx);
    }
    Tensor mean = sum * scale;
    PODSCOPE_RETURN_IF_ERROR(mean.status());
    means.push_back(std::move(mean));
  }
  return means;
}

}  // namespace podscope::runtime
