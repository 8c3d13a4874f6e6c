// Compiled graphs. An Executable runs on any addressable device of its
// client: Execute enqueues the kernels on the device's stream and returns the
// output buffers at once; errors arrive through the buffers' events.
#ifndef PODSCOPE_RUNTIME_PJRT_EXECUTABLE_H_
#define PODSCOPE_RUNTIME_PJRT_EXECUTABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/ir.h"
#include "podscope/runtime/pjrt/buffer.h"
#include "podscope/runtime/pjrt/device.h"

namespace podscope::runtime {

namespace internal {
struct CompiledProgram;
class IntraOpPool;
}  // namespace internal

// What the compiler did to a graph.
struct CompileStats {
  int num_nodes = 0;               // after dead-code elimination
  int num_kernels = 0;             // kernels launched per execution
  int num_fusions = 0;             // fused kernels covering two or more ops
  int num_fused_ops = 0;           // elementwise ops inside those fusions
  int num_buffer_slots = 0;        // distinct intermediate allocations
  int64_t intermediate_bytes = 0;  // scratch memory per execution
  int64_t unplanned_intermediate_bytes = 0;  // without buffer reuse
};

// A compiled graph, runnable on any addressable device of its client.
class Executable {
 public:
  ~Executable();

  const Graph& graph() const;
  uint64_t fingerprint() const { return graph().fingerprint(); }
  const CompileStats& stats() const;
  std::vector<Shape> parameter_shapes() const;
  std::vector<Shape> output_shapes() const;

  // Enqueues the computation on `device`'s stream and returns the output
  // buffers at once; they become ready when the computation has run. The
  // arguments must live on `device` and match the parameter shapes. An
  // argument that failed, or a failing kernel, fails every output.
  absl::StatusOr<std::vector<BufferPtr>> Execute(
      absl::Span<const BufferPtr> arguments, Device* device) const;

  // Constructed by Client::Compile.
  Executable(std::shared_ptr<const internal::CompiledProgram> program,
             std::shared_ptr<internal::IntraOpPool> pool);

 private:
  // Shared with queued executions, which may outlive the executable.
  std::shared_ptr<const internal::CompiledProgram> program_;
  std::shared_ptr<internal::IntraOpPool> pool_;
};

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_PJRT_EXECUTABLE_H_
