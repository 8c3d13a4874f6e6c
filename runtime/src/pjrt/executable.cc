#include "podscope/runtime/pjrt/executable.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "instrumentation.h"
#include "kernels/kernels.h"
#include "metrics_internal.h"
#include "parallel.h"
#include "pjrt/buffer_access.h"
#include "pjrt/device_runtime.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/recorder.h"
#include "podscope/profiler/trace.h"

namespace podscope::runtime {

using internal::BufferAccess;
using internal::CompiledProgram;
using internal::DeviceAllocation;
using internal::ValueLocation;

namespace {

// Runs every step of `program` on the calling (stream) thread.
absl::Status RunSteps(const CompiledProgram& program,
                      const std::vector<BufferPtr>& arguments, void* arena,
                      const std::vector<void*>& outputs,
                      const internal::IntraOpPool& pool, const Device* device,
                      uint64_t flow_id) {
  const Graph& graph = program.graph;
  const int n = static_cast<int>(graph.nodes().size());
  std::vector<void*> data(n, nullptr);
  for (int id = 0; id < n; ++id) {
    const ValueLocation& location = program.locations[id];
    switch (location.kind) {
      case ValueLocation::kParameter:
        data[id] = BufferAccess::Data(*arguments[location.index]);
        break;
      case ValueLocation::kConstant:
        // Host memory is device memory on this platform.
        data[id] =
            const_cast<void*>(graph.node(id).attrs.literal->untyped_data());
        break;
      case ValueLocation::kArena:
        data[id] = static_cast<char*>(arena) + location.index;
        break;
      case ValueLocation::kOutput:
        data[id] = outputs[location.index];
        break;
      case ValueLocation::kNone:
        break;
    }
  }
  const bool traced = internal::ObserverActive();
  std::vector<const void*> inputs;
  std::vector<const Shape*> shapes;
  for (const internal::Step& step : program.steps) {
    const int64_t start = traced ? internal::NowNs() : 0;
    inputs.clear();
    shapes.clear();
    for (int input : step.inputs) {
      inputs.push_back(data[input]);
      shapes.push_back(&graph.node(input).shape);
    }
    const Node& node = graph.node(step.node);
    PODSCOPE_RETURN_IF_ERROR(
        step.fusion >= 0 ? internal::RunFused(program.fusions[step.fusion],
                                              inputs, data[step.node], pool)
                         : internal::RunKernel(
                               {node, shapes, inputs, data[step.node], pool}));
    if (traced) {
      internal::Observer().OnOp(
          {device, graph.fingerprint(), step.op_name, node.scope, step.num_ops,
           start, internal::NowNs(), flow_id, step.flops, step.bytes_accessed,
           step.shape, step.operand_shapes});
      flow_id = 0;  // the flow arrives at the execution's first kernel
    }
  }
  const auto& output_nodes = graph.outputs();
  for (size_t i = 0; i < output_nodes.size(); ++i) {
    if (program.output_is_copy[i]) {
      std::memcpy(outputs[i], data[output_nodes[i]],
                  graph.node(output_nodes[i]).shape.byte_size());
    }
  }
  return absl::OkStatus();
}

}  // namespace

Executable::Executable(std::shared_ptr<const CompiledProgram> program,
                       std::shared_ptr<internal::IntraOpPool> pool)
    : program_(std::move(program)), pool_(std::move(pool)) {}

Executable::~Executable() = default;

const Graph& Executable::graph() const { return program_->graph; }
const CompileStats& Executable::stats() const { return program_->stats; }

std::vector<Shape> Executable::parameter_shapes() const {
  std::vector<Shape> shapes;
  for (int id : graph().parameters()) shapes.push_back(graph().node(id).shape);
  return shapes;
}

std::vector<Shape> Executable::output_shapes() const {
  std::vector<Shape> shapes;
  for (int id : graph().outputs()) shapes.push_back(graph().node(id).shape);
  return shapes;
}

absl::StatusOr<std::vector<BufferPtr>> Executable::Execute(
    absl::Span<const BufferPtr> arguments, Device* device) const {
  const Graph& g = graph();
  // The launch on the calling thread; its flow leads to the first kernel on
  // the device stream.
  profiler::Trace trace(PODSCOPE_INTERNAL_SITE("Execute"), [&] {
    return std::make_tuple("graph_hash", static_cast<int64_t>(g.fingerprint()));
  });
  uint64_t flow_id = 0;
  if (trace.recording()) {
    flow_id = profiler::NewFlowId();
    trace.FlowOut(flow_id);
  }
  if (device == nullptr || !device->addressable()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Execute(", g.name(), "): device ",
                     device == nullptr ? "null" : device->ToString(),
                     " is not addressable by this process"));
  }
  if (arguments.size() != g.parameters().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Execute(", g.name(), "): got ", arguments.size(),
                     " arguments for ", g.parameters().size(), " parameters"));
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Shape& expected = g.node(g.parameters()[i]).shape;
    if (arguments[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("Execute(", g.name(), "): argument ", i, " is null"));
    }
    if (arguments[i]->shape() != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat("Execute(", g.name(), "): argument ", i, " has shape ",
                       arguments[i]->shape().ToString(), " but parameter ", i,
                       " expects ", expected.ToString()));
    }
    if (arguments[i]->device() != device) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Execute(", g.name(), "): argument ", i, " lives on ",
          arguments[i]->device()->ToString(), ", not on ", device->ToString(),
          "; copy it with Buffer::CopyToDevice"));
    }
  }
  std::vector<BufferPtr> outputs;
  for (int id : g.outputs()) {
    outputs.push_back(BufferAccess::CreatePending(g.node(id).shape, device));
  }
  device->runtime()->stream().Enqueue([program = program_, pool = pool_, device,
                                       outputs, flow_id,
                                       arguments = std::vector<BufferPtr>(
                                           arguments.begin(),
                                           arguments.end())] {
    const int64_t start = internal::NowNs();
    absl::Status status;
    // Work on one stream runs in order, so these are already complete;
    // awaiting them picks up the error of a failed producer.
    for (const BufferPtr& argument : arguments) {
      status.Update(argument->ready().Await());
    }
    internal::DeviceMemory& memory = device->runtime()->memory();
    std::shared_ptr<DeviceAllocation> arena;
    std::vector<std::shared_ptr<DeviceAllocation>> storage;
    std::vector<void*> output_data;
    if (status.ok()) {
      auto allocation = memory.Allocate(program->arena_bytes, {"scratch", ""});
      status = allocation.status();
      if (status.ok()) arena = *std::move(allocation);
    }
    for (size_t i = 0; status.ok() && i < outputs.size(); ++i) {
      auto allocation = memory.Allocate(outputs[i]->shape().byte_size(),
                                        program->output_tags[i]);
      status = allocation.status();
      if (!status.ok()) break;
      output_data.push_back((*allocation)->data());
      storage.push_back(*std::move(allocation));
    }
    if (status.ok()) {
      status = RunSteps(*program, arguments, arena->data(), output_data, *pool,
                        device, flow_id);
    }
    arena.reset();  // scratch is free before anyone sees the outputs
    for (size_t i = 0; i < outputs.size(); ++i) {
      BufferAccess::Define(*outputs[i], status.ok() ? storage[i] : nullptr,
                           status);
    }
    const int64_t end = internal::NowNs();
    internal::RecordTime(internal::kExecuteTime, end - start);
    if (internal::ObserverActive()) {
      internal::Observer().OnExecute({device, program->graph.fingerprint(),
                                      program->graph.name(), start, end,
                                      status});
    }
  });
  return outputs;
}

}  // namespace podscope::runtime
