#include "device_memory.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace podscope::runtime::internal {

namespace {
constexpr int64_t kAlignment = 64;
}  // namespace

DeviceAllocation::DeviceAllocation(std::shared_ptr<DeviceMemory> owner,
                                   void* data, int64_t size)
    : owner_(std::move(owner)), data_(data), size_(size) {}

DeviceAllocation::~DeviceAllocation() {
  std::free(data_);
  owner_->Release(size_);
}

DeviceMemory::DeviceMemory(std::string device_name, int64_t bytes_limit)
    : device_name_(std::move(device_name)) {
  stats_.bytes_limit = bytes_limit;
}

absl::StatusOr<std::shared_ptr<DeviceAllocation>> DeviceMemory::Allocate(
    int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.bytes_limit > 0 &&
        stats_.bytes_in_use + bytes > stats_.bytes_limit) {
      return absl::ResourceExhaustedError(
          absl::StrCat("Out of memory on ", device_name_, ": allocating ",
                       bytes, " bytes with ", stats_.bytes_in_use, " of ",
                       stats_.bytes_limit, " bytes in use"));
    }
    stats_.bytes_in_use += bytes;
    stats_.peak_bytes_in_use =
        std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    ++stats_.num_allocs;
  }
  const int64_t rounded = std::max<int64_t>(
      kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  void* data = std::aligned_alloc(kAlignment, rounded);
  if (data == nullptr) {
    Release(bytes);
    return absl::ResourceExhaustedError(absl::StrCat(
        "Out of host memory backing ", device_name_, ": ", bytes, " bytes"));
  }
  return std::make_shared<DeviceAllocation>(shared_from_this(), data, bytes);
}

MemoryStats DeviceMemory::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void DeviceMemory::Release(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes_in_use -= bytes;
}

}  // namespace podscope::runtime::internal
