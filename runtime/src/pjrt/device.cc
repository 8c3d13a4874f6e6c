#include "podscope/runtime/pjrt/device.h"

#include "absl/strings/str_cat.h"
#include "pjrt/device_runtime.h"

namespace podscope::runtime {
namespace internal {

DeviceRuntime::DeviceRuntime(const std::string& device_name, int device_id,
                             int64_t bytes_limit)
    : memory_(
          std::make_shared<DeviceMemory>(device_name, device_id, bytes_limit)),
      stream_("podscope:" + device_name) {}

}  // namespace internal

Device::Device(DeviceDescription description, int local_ordinal,
               std::unique_ptr<internal::DeviceRuntime> runtime)
    : description_(std::move(description)),
      local_ordinal_(local_ordinal),
      runtime_(std::move(runtime)) {}

Device::~Device() = default;

std::string Device::ToString() const {
  return absl::StrCat(description_.kind, ":", description_.id);
}

absl::StatusOr<MemoryStats> Device::GetMemoryStats() const {
  if (runtime_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("Device ", ToString(), " belongs to process ",
                     description_.process_index,
                     " and is not addressable from this process"));
  }
  return runtime_->memory().stats();
}

absl::Status Device::WaitUntilIdle() const {
  if (runtime_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("Device ", ToString(), " is not addressable"));
  }
  // The stream destroys each task before taking the next, so the marker
  // completes only after earlier tasks released their buffers.
  return runtime_->stream().Marker().Await();
}

}  // namespace podscope::runtime
