#ifndef PODSCOPE_RUNTIME_SRC_LAZY_LAZY_INTERNAL_H_
#define PODSCOPE_RUNTIME_SRC_LAZY_LAZY_INTERNAL_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/pjrt/buffer.h"

namespace podscope::runtime {
struct Sharding;
struct ShardedValue;
}  // namespace podscope::runtime

namespace podscope::runtime::internal {

struct TensorImpl {
  std::shared_ptr<LazyContext> context;
  Shape shape;
  absl::Status status;
  // Set once a step has computed the value (or it was transferred); an
  // SPMD context's tensors hold `sharded` instead.
  BufferPtr buffer;
  std::shared_ptr<ShardedValue> sharded;
  bool materialized() const { return buffer != nullptr || sharded != nullptr; }
  // While pending: the node in the context's step graph of `generation`.
  int64_t generation = -1;
  Value value;
  // MarkSharding's annotation (spmd.h), or null.
  std::shared_ptr<const Sharding> sharding;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_LAZY_LAZY_INTERNAL_H_
