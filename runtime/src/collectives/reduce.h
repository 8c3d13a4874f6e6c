#ifndef PODSCOPE_RUNTIME_SRC_COLLECTIVES_REDUCE_H_
#define PODSCOPE_RUNTIME_SRC_COLLECTIVES_REDUCE_H_

// Elementwise reductions by dtype for the collectives, in Gloo's reduce
// function form: out[i] = a[i] (op) b[i] (out may alias a or b).

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "podscope/runtime/collectives.h"

namespace podscope::runtime::internal {

using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);

// kMean reduces as kSum (the caller divides). InvalidArgument for kMean
// on pred.
absl::StatusOr<ReduceFn> ReduceFunction(ElementType type, ReduceOp op);

// data[i] /= divisor for f32 and i32 (truncating).
void DivideInPlace(ElementType type, void* data, int64_t count, int divisor);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_COLLECTIVES_REDUCE_H_
