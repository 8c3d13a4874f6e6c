#ifndef PODSCOPE_RUNTIME_SRC_PJRT_DEVICE_MEMORY_H_
#define PODSCOPE_RUNTIME_SRC_PJRT_DEVICE_MEMORY_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "podscope/runtime/pjrt/device.h"

namespace podscope::runtime::internal {

class DeviceMemory;

// What an allocation is for, as a trace's Allocate instant names it: the
// op kind that produces the buffer ("dot", "fusion", ...; "transfer" for
// data from the host or another device, "collective", "scratch" for an
// execution's intermediates) and the ScopedName path of that op.
struct AllocationTag {
  std::string_view op = "transfer";
  std::string_view scope;
};

// One block of device memory, returned to its device when destroyed.
class DeviceAllocation {
 public:
  DeviceAllocation(std::shared_ptr<DeviceMemory> owner, void* data,
                   int64_t size, int64_t id);
  ~DeviceAllocation();
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  void* data() const { return data_; }
  int64_t size() const { return size_; }
  // Unique per device for the life of the process (a trace's buffer_id).
  int64_t id() const { return id_; }

 private:
  std::shared_ptr<DeviceMemory> owner_;
  void* data_;
  int64_t size_;
  int64_t id_;
};

// Accounts the memory of one device against an optional limit, and reports
// the bytes in use to the runtime observer at every change. Shared with
// allocations so that buffers may outlive their client (so it knows its
// device by id only).
//
// Freed blocks are kept for reuse by their (64-byte rounded) size, up to
// kMaxCachedBytes: an execution's arena and outputs have the same sizes
// every step, so steady training allocates no fresh pages (the host would
// otherwise return large blocks to the system and fault them in again).
// The accounting counts only blocks in use.
class DeviceMemory : public std::enable_shared_from_this<DeviceMemory> {
 public:
  static constexpr int64_t kMaxCachedBytes = int64_t{1} << 30;

  DeviceMemory(std::string device_name, int device_id, int64_t bytes_limit);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // 64-byte aligned; fails with ResourceExhausted over the limit. `tag`
  // says what the memory is for (reported with the allocation).
  absl::StatusOr<std::shared_ptr<DeviceAllocation>> Allocate(
      int64_t bytes, AllocationTag tag = {});
  MemoryStats stats() const;

 private:
  friend class DeviceAllocation;
  // Returns a block (of `bytes` requested, at `data`) to the cache or the
  // host.
  void Release(int64_t bytes, int64_t id, void* data);
  // Frees every cached block.
  void DropCache();
  // Requires mu_: adds `delta` to the bytes in use and reports the change
  // of allocation `id` (an allocation when delta >= 0 and `tag` is set).
  void AddLocked(int64_t delta, int64_t id, const AllocationTag* tag);

  std::string device_name_;
  int device_id_;
  mutable std::mutex mu_;
  MemoryStats stats_;
  int64_t next_id_ = 1;
  std::unordered_multimap<int64_t, void*> cache_;  // by rounded size
  int64_t cached_bytes_ = 0;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_PJRT_DEVICE_MEMORY_H_
