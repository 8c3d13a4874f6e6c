#ifndef PODSCOPE_RUNTIME_SRC_PJRT_DEVICE_RUNTIME_H_
#define PODSCOPE_RUNTIME_SRC_PJRT_DEVICE_RUNTIME_H_

#include <memory>
#include <string>

#include "pjrt/device_memory.h"
#include "pjrt/stream.h"

namespace podscope::runtime::internal {

// What only an addressable device has: its stream and its memory.
class DeviceRuntime {
 public:
  DeviceRuntime(const std::string& device_name, int device_id,
                int64_t bytes_limit);

  Stream& stream() { return stream_; }
  DeviceMemory& memory() { return *memory_; }

 private:
  // Declared before the stream so that queued work finishes before the
  // accounting goes away (allocations keep it alive regardless).
  std::shared_ptr<DeviceMemory> memory_;
  Stream stream_;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_PJRT_DEVICE_RUNTIME_H_
