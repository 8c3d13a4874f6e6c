#ifndef PODSCOPE_RUNTIME_REDUCE_OP_H_
#define PODSCOPE_RUNTIME_REDUCE_OP_H_

// The reductions of the collectives (collectives.h) and of the all_reduce
// IR op (GraphBuilder::AllReduce). On pred, sum and max are a logical or,
// min a logical and, and mean is not defined; on i32 the mean truncates.

#include "absl/strings/string_view.h"

namespace podscope::runtime {

enum class ReduceOp { kSum, kMax, kMin, kMean };
absl::string_view ReduceOpName(ReduceOp op);  // "sum", "max", "min", "mean"

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_REDUCE_OP_H_
