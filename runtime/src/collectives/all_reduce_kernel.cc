// The all_reduce IR op's kernel: the operand copied to the output, then
// all-reduced in place through the communicator named by the op's id, on
// the device stream that runs the execution.

#include <cstring>

#include "absl/strings/str_cat.h"
#include "collectives/state.h"
#include "kernels/kernels.h"

namespace podscope::runtime::internal {

absl::Status RunAllReduce(const KernelArgs& args) {
  const Node& node = args.node;
  std::shared_ptr<Communicator::State> st = LookupCommunicator(node.attrs.salt);
  if (st == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "all_reduce: no communicator with id ", node.attrs.salt,
        " in this process (create the Communicator before executing)"));
  }
  const ReduceOp op = static_cast<ReduceOp>(node.attrs.axis);
  const ElementType type = node.shape.element_type();
  const int64_t count = node.shape.num_elements();
  const int64_t bytes = node.shape.byte_size();
  if (bytes > 0 && args.output != args.inputs[0]) {
    std::memmove(args.output, args.inputs[0], bytes);
  }
  Communicator::State::Call call{"AllReduce", "ring",         ReduceOpName(op),
                                 bytes,       st->world_size, {}};
  call.dtype = ElementTypeName(type);
  call.count = count;
  return st->Run(call, [&](uint32_t tag) {
    return st->AllReduceInPlace(type, args.output, count, op, tag,
                                st->world_size);
  });
}

}  // namespace podscope::runtime::internal
