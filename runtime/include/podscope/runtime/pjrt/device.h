// Devices of the job. Every process knows every device's description
// (global id, kind, owning process); addressable devices (this process's)
// also have an in-order stream thread and memory accounting.
#ifndef PODSCOPE_RUNTIME_PJRT_DEVICE_H_
#define PODSCOPE_RUNTIME_PJRT_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace podscope::runtime {

namespace internal {
class DeviceRuntime;
}  // namespace internal

// Memory accounting of one addressable device.
struct MemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t num_allocs = 0;   // allocations made since the device started
  int64_t bytes_limit = 0;  // 0 means unlimited
};

// What every process knows about a device of the job, addressable or not.
struct DeviceDescription {
  int id = 0;             // global id, unique across the job
  int process_index = 0;  // the process that can address the device
  std::string kind;       // the platform name, e.g. "CPU"
  int local_hardware_id = 0;
};

// One device of the job. Addressable devices (owned by this process) have a
// stream thread that runs their work in order, and memory accounting.
class Device {
 public:
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int id() const { return description_.id; }
  int process_index() const { return description_.process_index; }
  const std::string& kind() const { return description_.kind; }
  int local_hardware_id() const { return description_.local_hardware_id; }
  bool addressable() const { return runtime_ != nullptr; }
  // Index among this process's addressable devices; -1 if not addressable.
  int local_ordinal() const { return local_ordinal_; }
  // The global ordinal is the global id.
  int global_ordinal() const { return description_.id; }
  const DeviceDescription& description() const { return description_; }

  // "CPU:0" (kind and global id).
  std::string ToString() const;

  // Fails with FailedPrecondition for a device of another process. Memory
  // is returned when the device is done with it: a buffer dropped right
  // after its ready() event may still count until WaitUntilIdle().
  absl::StatusOr<MemoryStats> GetMemoryStats() const;

  // Blocks until the work enqueued on this device so far has run and let go
  // of what it held, like torch_xla's wait_device_ops().
  absl::Status WaitUntilIdle() const;

  // Stream and memory; null for devices of other processes.
  internal::DeviceRuntime* runtime() const { return runtime_.get(); }

 private:
  friend class Client;
  Device(DeviceDescription description, int local_ordinal,
         std::unique_ptr<internal::DeviceRuntime> runtime);

  DeviceDescription description_;
  int local_ordinal_;
  std::unique_ptr<internal::DeviceRuntime> runtime_;
};

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_PJRT_DEVICE_H_
