#ifndef PODSCOPE_RUNTIME_SRC_PJRT_BUFFER_ACCESS_H_
#define PODSCOPE_RUNTIME_SRC_PJRT_BUFFER_ACCESS_H_

#include <memory>

#include "pjrt/device_memory.h"
#include "podscope/runtime/pjrt/buffer.h"

namespace podscope::runtime::internal {

// The runtime's view of buffers: creation before their data exists, and
// definition by the work that produces them.
struct BufferAccess {
  static BufferPtr CreatePending(Shape shape, Device* device) {
    return BufferPtr(new Buffer(std::move(shape), device));
  }
  // Completes the buffer's ready() event; storage is null on error.
  static void Define(Buffer& buffer, std::shared_ptr<DeviceAllocation> storage,
                     absl::Status status) {
    buffer.storage_ = std::move(storage);
    buffer.ready_.Set(std::move(status));
  }
  // Valid on the device's stream after the defining work has run.
  static void* Data(const Buffer& buffer) {
    return buffer.storage_ == nullptr ? nullptr : buffer.storage_->data();
  }
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_PJRT_BUFFER_ACCESS_H_
