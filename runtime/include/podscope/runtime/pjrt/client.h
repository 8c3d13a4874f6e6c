// The runtime's entry point, as PJRT's client: the platform chosen by
// environment, the job's global devices and this process's addressable ones,
// host-to-device transfers and compilation with a cache keyed by the graph's
// structure. Thread-safe; every transfer and compile may run concurrently.
#ifndef PODSCOPE_RUNTIME_PJRT_CLIENT_H_
#define PODSCOPE_RUNTIME_PJRT_CLIENT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/ir.h"
#include "podscope/runtime/ir/literal.h"
#include "podscope/runtime/pjrt/buffer.h"
#include "podscope/runtime/pjrt/device.h"
#include "podscope/runtime/pjrt/executable.h"

namespace podscope::runtime {

// How a client is set up. FromEnvironment() reads:
//   PODSCOPE_DEVICE (else PJRT_DEVICE): platform, default "CPU"
//   CPU_NUM_DEVICES: devices per process, default 1
//   PODSCOPE_VISIBLE_DEVICES: comma list of local hardware ids to use
struct ClientOptions {
  std::string platform = "CPU";
  int num_devices = 1;
  std::vector<int> visible_devices;       // empty: all
  int64_t device_memory_limit_bytes = 0;  // per device; 0: unlimited
  int intra_op_threads = 0;               // 0: one per hardware thread

  static absl::StatusOr<ClientOptions> FromEnvironment();
};

// The devices of the whole job as seen by this process. A single-process
// client builds it locally; a multi-process job fills in the devices of the
// other processes (process_index != this one), which are not addressable.
struct Topology {
  int process_index = 0;
  int process_count = 1;
  std::vector<DeviceDescription> devices;  // ordered by global id
};

// Platforms this build can create clients for ("CPU").
std::vector<std::string> AvailablePlatforms();

// This process's devices under `options`, numbered from global id 0.
absl::StatusOr<Topology> LocalTopology(const ClientOptions& options);

struct CompileCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
};

enum class HostBufferSemantics {
  // The data is copied before the call returns; the caller may reuse it.
  kImmutableOnlyDuringCall,
  // The device copies asynchronously; the data must stay unchanged until the
  // buffer's ready() event completes.
  kImmutableUntilTransferCompletes,
};

class Client {
 public:
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& platform_name() const { return platform_; }
  int process_index() const { return process_index_; }
  int process_count() const { return process_count_; }

  // All devices of the job, by global id.
  absl::Span<Device* const> devices() const { return devices_; }
  // This process's devices, by local ordinal.
  absl::Span<Device* const> addressable_devices() const {
    return addressable_devices_;
  }
  int device_count() const { return static_cast<int>(devices_.size()); }
  int addressable_device_count() const {
    return static_cast<int>(addressable_devices_.size());
  }
  absl::StatusOr<Device*> LookupDevice(int global_id) const;
  absl::StatusOr<Device*> LookupAddressableDevice(int local_ordinal) const;

  // Host to device. The buffer is returned at once; the copy runs on the
  // device's stream in order with the device's other work.
  absl::StatusOr<BufferPtr> BufferFromHost(const void* data, const Shape& shape,
                                           Device* device,
                                           HostBufferSemantics semantics);
  absl::StatusOr<BufferPtr> BufferFromLiteral(Literal literal, Device* device);

  // Verifies, optimizes and plans `graph`, or returns the executable
  // compiled earlier for a structurally equal graph.
  absl::StatusOr<std::shared_ptr<Executable>> Compile(const Graph& graph);
  CompileCacheStats compile_cache_stats() const;

  // Creates a client over `topology` (see LocalTopology).
  static absl::StatusOr<std::unique_ptr<Client>> Create(
      const ClientOptions& options, const Topology& topology);

 private:
  Client() = default;
  // The cached executable for `graph` (counted as a hit), or null.
  std::shared_ptr<Executable> LookupCompiled(const Graph& graph);

  std::string platform_;
  int process_index_ = 0;
  int process_count_ = 1;
  std::vector<std::unique_ptr<Device>> owned_devices_;
  std::vector<Device*> devices_;
  std::vector<Device*> addressable_devices_;
  std::shared_ptr<internal::IntraOpPool> pool_;

  // A pthread mutex rather than absl::Mutex: sanitizers see through it even
  // with an uninstrumented abseil.
  mutable std::mutex cache_mu_;
  // Serializes compiles, so threads asking for the same new graph at once
  // compile it once and the others see a cache hit.
  std::mutex compile_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Executable>> cache_;
  int64_t cache_hits_ = 0;
  int64_t cache_misses_ = 0;
};

// Creates a client for this process from the environment.
absl::StatusOr<std::unique_ptr<Client>> CreateClient();
absl::StatusOr<std::unique_ptr<Client>> CreateClient(
    const ClientOptions& options);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_PJRT_CLIENT_H_
