#include "podscope/runtime/pjrt/client.h"

#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "distributed/job_topology.h"
#include "instrumentation.h"
#include "machine_peak.h"
#include "metrics_internal.h"
#include "parallel.h"
#include "pjrt/buffer_access.h"
#include "pjrt/device_runtime.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/trace.h"
#include "profiler_observer.h"

namespace podscope::runtime {

using internal::BufferAccess;

absl::StatusOr<std::unique_ptr<Client>> Client::Create(
    const ClientOptions& options, const Topology& topology) {
  if (topology.process_count < 1 || topology.process_index < 0 ||
      topology.process_index >= topology.process_count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Topology: process index ", topology.process_index,
        " is outside a job of ", topology.process_count, " processes"));
  }
  std::unique_ptr<Client> client(new Client());
  client->platform_ = options.platform;
  client->process_index_ = topology.process_index;
  client->process_count_ = topology.process_count;
  int local_ordinal = 0;
  for (size_t i = 0; i < topology.devices.size(); ++i) {
    const DeviceDescription& description = topology.devices[i];
    if (description.id != static_cast<int>(i) ||
        description.process_index < 0 ||
        description.process_index >= topology.process_count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Topology: device ", i, " has global id ", description.id,
          " and process ", description.process_index,
          "; ids must be 0..n-1 in order and processes in range"));
    }
    std::unique_ptr<internal::DeviceRuntime> runtime;
    int ordinal = -1;
    if (description.process_index == topology.process_index) {
      runtime = std::make_unique<internal::DeviceRuntime>(
          absl::StrCat(description.kind, ":", description.id), description.id,
          options.device_memory_limit_bytes);
      ordinal = local_ordinal++;
    }
    client->owned_devices_.push_back(std::unique_ptr<Device>(
        new Device(description, ordinal, std::move(runtime))));
    Device* device = client->owned_devices_.back().get();
    client->devices_.push_back(device);
    if (device->addressable()) client->addressable_devices_.push_back(device);
  }
  if (client->addressable_devices_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Topology: process ", topology.process_index,
                     " has no devices of its own"));
  }
  const int threads =
      options.intra_op_threads > 0
          ? options.intra_op_threads
          : static_cast<int>(std::thread::hardware_concurrency());
  client->pool_ = std::make_shared<internal::IntraOpPool>(threads);
  internal::AttachProfiler(client->process_index_, client->process_count_,
                           client->addressable_devices_);
  internal::RecordMachinePeak(*client->pool_);
  return client;
}

Client::~Client() {
  // Stop the streams (running what is queued) before executables and the
  // pool they use go away.
  owned_devices_.clear();
}

absl::StatusOr<Device*> Client::LookupDevice(int global_id) const {
  if (global_id < 0 || global_id >= device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("No device with global id ",
                                                   global_id, "; the job has ",
                                                   device_count(), " devices"));
  }
  return devices_[global_id];
}

absl::StatusOr<Device*> Client::LookupAddressableDevice(
    int local_ordinal) const {
  if (local_ordinal < 0 || local_ordinal >= addressable_device_count()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "No addressable device with local ordinal ", local_ordinal,
        "; this process has ", addressable_device_count(), " devices"));
  }
  return addressable_devices_[local_ordinal];
}

absl::StatusOr<BufferPtr> Client::BufferFromHost(
    const void* data, const Shape& shape, Device* device,
    HostBufferSemantics semantics) {
  if (device == nullptr || !device->addressable()) {
    return absl::InvalidArgumentError(
        absl::StrCat("BufferFromHost: device ",
                     device == nullptr ? "null" : device->ToString(),
                     " is not addressable by this process"));
  }
  if (data == nullptr && shape.byte_size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("BufferFromHost: null data for ", shape.ToString()));
  }
  // kImmutableOnlyDuringCall: stage a private copy now so the caller may
  // reuse its memory as soon as we return.
  std::shared_ptr<Literal> staged;
  if (semantics == HostBufferSemantics::kImmutableOnlyDuringCall) {
    staged = std::make_shared<Literal>(shape);
    if (shape.byte_size() > 0) {
      std::memcpy(staged->untyped_data(), data, shape.byte_size());
    }
    data = staged->untyped_data();
  }
  BufferPtr buffer = BufferAccess::CreatePending(shape, device);
  device->runtime()->stream().Enqueue([buffer, data, staged, device] {
    const int64_t start = internal::NowNs();
    const int64_t bytes = buffer->shape().byte_size();
    auto storage = device->runtime()->memory().Allocate(bytes);
    absl::Status status = storage.status();
    if (status.ok()) {
      if (bytes > 0) std::memcpy((*storage)->data(), data, bytes);
      BufferAccess::Define(*buffer, *std::move(storage), absl::OkStatus());
    } else {
      BufferAccess::Define(*buffer, nullptr, status);
    }
    const int64_t end = internal::NowNs();
    internal::RecordTime(internal::kTransferToDeviceTime, end - start);
    if (internal::ObserverActive()) {
      internal::Observer().OnTransfer(
          {device, true, bytes, start, end, status});
    }
  });
  return buffer;
}

absl::StatusOr<BufferPtr> Client::BufferFromLiteral(Literal literal,
                                                    Device* device) {
  auto owned = std::make_shared<Literal>(std::move(literal));
  PODSCOPE_ASSIGN_OR_RETURN(
      BufferPtr buffer,
      BufferFromHost(owned->untyped_data(), owned->shape(), device,
                     HostBufferSemantics::kImmutableUntilTransferCompletes));
  // Keep the literal until the transfer has read it.
  buffer->ready().OnReady([owned](const absl::Status&) {});
  return buffer;
}

absl::StatusOr<std::shared_ptr<Executable>> Client::Compile(
    const Graph& graph) {
  profiler::Trace trace(PODSCOPE_INTERNAL_SITE("Compile"), [&] {
    return std::make_tuple("graph_hash",
                           static_cast<int64_t>(graph.fingerprint()));
  });
  const int64_t start = internal::NowNs();
  std::shared_ptr<Executable> executable = LookupCompiled(graph);
  bool hit = executable != nullptr;
  if (!hit) {
    std::lock_guard<std::mutex> compiling(compile_mu_);
    executable = LookupCompiled(graph);  // compiled while we waited?
    hit = executable != nullptr;
    if (!hit) {
      PODSCOPE_ASSIGN_OR_RETURN(
          std::shared_ptr<const internal::CompiledProgram> program,
          internal::CompileGraph(graph));
      executable = std::make_shared<Executable>(std::move(program), pool_);
      std::lock_guard<std::mutex> lock(cache_mu_);
      cache_.emplace(graph.structural_key(), executable);
      ++cache_misses_;
    }
  }
  const int64_t end = internal::NowNs();
  trace.AddArg("cache_hit", hit);
  if (trace.recording()) {
    std::string signature;
    for (int id : graph.parameters()) {
      if (!signature.empty()) signature.push_back(' ');
      signature += graph.node(id).shape.ToString();
    }
    trace.AddArg("signature", std::string_view(signature));
    trace.AddArg("graph_ops", static_cast<int64_t>(graph.nodes().size()));
    const int64_t step = internal::CurrentLazyStep();
    if (step >= 0) trace.AddArg("step", step);
  }
  internal::IncrementCounter(hit ? internal::kCachedCompile
                                 : internal::kUncachedCompile);
  if (!hit) internal::RecordTime(internal::kCompileTime, end - start);
  if (internal::ObserverActive()) {
    internal::Observer().OnCompile(
        {graph.fingerprint(), graph.name(), hit, executable->stats().num_nodes,
         executable->stats().num_kernels, start, end});
  }
  return executable;
}

std::shared_ptr<Executable> Client::LookupCompiled(const Graph& graph) {
  std::lock_guard<std::mutex> lock(cache_mu_);
  auto it = cache_.find(graph.structural_key());
  if (it == cache_.end()) return nullptr;
  ++cache_hits_;
  return it->second;
}

CompileCacheStats Client::compile_cache_stats() const {
  std::lock_guard<std::mutex> lock(cache_mu_);
  return {cache_hits_, cache_misses_, static_cast<int64_t>(cache_.size())};
}

absl::StatusOr<std::unique_ptr<Client>> CreateClient(
    const ClientOptions& options) {
  PODSCOPE_ASSIGN_OR_RETURN(Topology topology, LocalTopology(options));
  // After Job::Init, the client spans every process of the job.
  if (std::optional<internal::JobDevices> job = internal::GetJobDevices()) {
    PODSCOPE_ASSIGN_OR_RETURN(topology, internal::JobTopology(topology, *job));
  }
  return Client::Create(options, topology);
}

absl::StatusOr<std::unique_ptr<Client>> CreateClient() {
  PODSCOPE_ASSIGN_OR_RETURN(ClientOptions options,
                            ClientOptions::FromEnvironment());
  return CreateClient(options);
}

}  // namespace podscope::runtime
