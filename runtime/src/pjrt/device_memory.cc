#include "pjrt/device_memory.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "instrumentation.h"

namespace podscope::runtime::internal {

namespace {
constexpr int64_t kAlignment = 64;

int64_t Rounded(int64_t bytes) {
  return std::max<int64_t>(kAlignment,
                           (bytes + kAlignment - 1) / kAlignment * kAlignment);
}
}  // namespace

DeviceAllocation::DeviceAllocation(std::shared_ptr<DeviceMemory> owner,
                                   void* data, int64_t size, int64_t id)
    : owner_(std::move(owner)), data_(data), size_(size), id_(id) {}

DeviceAllocation::~DeviceAllocation() { owner_->Release(size_, id_, data_); }

DeviceMemory::DeviceMemory(std::string device_name, int device_id,
                           int64_t bytes_limit)
    : device_name_(std::move(device_name)), device_id_(device_id) {
  stats_.bytes_limit = bytes_limit;
}

absl::StatusOr<std::shared_ptr<DeviceAllocation>> DeviceMemory::Allocate(
    int64_t bytes, AllocationTag tag) {
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.bytes_limit > 0 &&
        stats_.bytes_in_use + bytes > stats_.bytes_limit) {
      return absl::ResourceExhaustedError(
          absl::StrCat("Out of memory on ", device_name_, ": allocating ",
                       bytes, " bytes with ", stats_.bytes_in_use, " of ",
                       stats_.bytes_limit, " bytes in use"));
    }
    ++stats_.num_allocs;
    id = next_id_++;
    AddLocked(bytes, id, &tag);
    auto cached = cache_.find(Rounded(bytes));
    if (cached != cache_.end()) {
      void* data = cached->second;
      cached_bytes_ -= cached->first;
      cache_.erase(cached);
      return std::make_shared<DeviceAllocation>(shared_from_this(), data, bytes,
                                                id);
    }
  }
  const int64_t rounded = Rounded(bytes);
  void* data = std::aligned_alloc(kAlignment, rounded);
  if (data == nullptr) {
    DropCache();
    data = std::aligned_alloc(kAlignment, rounded);
  }
  if (data == nullptr) {
    Release(bytes, id, nullptr);
    return absl::ResourceExhaustedError(absl::StrCat(
        "Out of host memory backing ", device_name_, ": ", bytes, " bytes"));
  }
  return std::make_shared<DeviceAllocation>(shared_from_this(), data, bytes,
                                            id);
}

MemoryStats DeviceMemory::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

DeviceMemory::~DeviceMemory() { DropCache(); }

void DeviceMemory::Release(int64_t bytes, int64_t id, void* data) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    AddLocked(-bytes, id, nullptr);
    const int64_t rounded = Rounded(bytes);
    if (data != nullptr && cached_bytes_ + rounded <= kMaxCachedBytes) {
      cache_.emplace(rounded, data);
      cached_bytes_ += rounded;
      return;
    }
  }
  std::free(data);
}

void DeviceMemory::DropCache() {
  std::unordered_multimap<int64_t, void*> cache;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cache.swap(cache_);
    cached_bytes_ = 0;
  }
  for (const auto& [size, data] : cache) std::free(data);
}

void DeviceMemory::AddLocked(int64_t delta, int64_t id,
                             const AllocationTag* tag) {
  stats_.bytes_in_use += delta;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  // Reported under the lock, so a device's totals reach the observer in
  // the order of their times. The observer never allocates device memory,
  // so it cannot wait for this lock.
  if (ObserverActive()) {
    MemoryEvent event;
    event.device_id = device_id_;
    event.bytes_in_use = stats_.bytes_in_use;
    event.time_ns = NowNs();
    event.allocated = tag != nullptr;
    event.buffer_id = id;
    event.bytes = delta < 0 ? -delta : delta;
    if (tag != nullptr) {
      event.op = tag->op;
      event.scope = tag->scope;
    }
    Observer().OnMemory(event);
  }
}

}  // namespace podscope::runtime::internal
