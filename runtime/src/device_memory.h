#ifndef PODSCOPE_RUNTIME_SRC_DEVICE_MEMORY_H_
#define PODSCOPE_RUNTIME_SRC_DEVICE_MEMORY_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "podscope/runtime/device.h"

namespace podscope::runtime::internal {

class DeviceMemory;

// One block of device memory, returned to its device when destroyed.
class DeviceAllocation {
 public:
  DeviceAllocation(std::shared_ptr<DeviceMemory> owner, void* data,
                   int64_t size);
  ~DeviceAllocation();
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  void* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  std::shared_ptr<DeviceMemory> owner_;
  void* data_;
  int64_t size_;
};

// Accounts the memory of one device against an optional limit, and reports
// the bytes in use to the runtime observer at every change. Shared with
// allocations so that buffers may outlive their client (so it knows its
// device by id only).
class DeviceMemory : public std::enable_shared_from_this<DeviceMemory> {
 public:
  DeviceMemory(std::string device_name, int device_id, int64_t bytes_limit);

  // 64-byte aligned; fails with ResourceExhausted over the limit.
  absl::StatusOr<std::shared_ptr<DeviceAllocation>> Allocate(int64_t bytes);
  MemoryStats stats() const;

 private:
  friend class DeviceAllocation;
  void Release(int64_t bytes);
  // Requires mu_: adds `delta` to the bytes in use and reports the total.
  void AddLocked(int64_t delta);

  std::string device_name_;
  int device_id_;
  mutable std::mutex mu_;
  MemoryStats stats_;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_DEVICE_MEMORY_H_
