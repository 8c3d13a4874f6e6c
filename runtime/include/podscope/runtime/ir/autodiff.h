#ifndef PODSCOPE_RUNTIME_IR_AUTODIFF_H_
#define PODSCOPE_RUNTIME_IR_AUTODIFF_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/builder.h"

namespace podscope::runtime {

// Reverse-mode differentiation: records into `builder` the computation of
// d(loss)/d(x) for every x in `wrt` and returns those values, in order, each
// with the shape of its x. `loss` must be an f32 scalar. A value that loss
// does not depend on gets a zero gradient. Gradients do not flow through
// integer or predicate values (compare, argmax, one_hot, labels).
absl::StatusOr<std::vector<Value>> Grad(GraphBuilder& builder, Value loss,
                                        absl::Span<const Value> wrt);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_IR_AUTODIFF_H_
