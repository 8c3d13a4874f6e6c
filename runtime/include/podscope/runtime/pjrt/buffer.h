// Device arrays. A Buffer exists from the moment the work that defines it
// (a transfer or an execution) is enqueued; ready() completes when that work
// has run, carrying its error if it failed, and everything computed from a
// failed buffer fails with the same error. Copies to the host and to other
// devices are asynchronous and ordered on the devices' streams.
#ifndef PODSCOPE_RUNTIME_PJRT_BUFFER_H_
#define PODSCOPE_RUNTIME_PJRT_BUFFER_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/runtime/ir/literal.h"
#include "podscope/runtime/ir/shape.h"
#include "podscope/runtime/pjrt/device.h"
#include "podscope/runtime/pjrt/future.h"

namespace podscope::runtime {

namespace internal {
class DeviceAllocation;
struct BufferAccess;
}  // namespace internal

// An array in a device's memory. A buffer exists as soon as the work that
// defines it (a transfer or an execution) has been enqueued; ready()
// completes when that work has run, with its error if it failed.
class Buffer : public std::enable_shared_from_this<Buffer> {
 public:
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const Shape& shape() const { return shape_; }
  Device* device() const { return device_; }
  const Event& ready() const { return ready_; }
  absl::Status Await() const { return ready_.Await(); }

  // Copies the buffer to host memory at `dst` after all work already
  // enqueued on the device. `dst` must hold shape().byte_size() bytes and
  // stay valid until the returned event completes.
  Event ToHost(void* dst, int64_t dst_bytes);
  // Copies the buffer into a new Literal.
  Future<Literal> ToLiteral();

  // Copies the buffer to another addressable device, asynchronously.
  absl::StatusOr<std::shared_ptr<Buffer>> CopyToDevice(Device* dst);

 private:
  friend struct internal::BufferAccess;
  Buffer(Shape shape, Device* device);

  Shape shape_;
  Device* device_;
  Event ready_;
  // Set once by the defining work, before ready_ completes.
  std::shared_ptr<internal::DeviceAllocation> storage_;
};

using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_PJRT_BUFFER_H_
