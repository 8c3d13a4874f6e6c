#include "podscope/runtime/pjrt/buffer.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "instrumentation.h"
#include "metrics_internal.h"
#include "pjrt/buffer_access.h"
#include "pjrt/device_runtime.h"

namespace podscope::runtime {

using internal::BufferAccess;

Buffer::Buffer(Shape shape, Device* device)
    : shape_(std::move(shape)), device_(device) {}

Buffer::~Buffer() = default;

Event Buffer::ToHost(void* dst, int64_t dst_bytes) {
  if (dst_bytes < shape_.byte_size()) {
    return Event::Ready(absl::InvalidArgumentError(
        absl::StrCat("ToHost: destination holds ", dst_bytes, " bytes but ",
                     shape_.ToString(), " on ", device_->ToString(), " needs ",
                     shape_.byte_size())));
  }
  Event done;
  // The captured reference keeps the buffer alive until the copy has run.
  device_->runtime()->stream().Enqueue(
      [self = shared_from_this(), this, dst, done] {
        // Work on one stream runs in order, so the defining work has run; a
        // buffer defined on another stream is awaited.
        absl::Status status = ready_.Await();
        const int64_t start = internal::NowNs();
        if (status.ok()) {
          std::memcpy(dst, BufferAccess::Data(*this), shape_.byte_size());
        }
        const int64_t end = internal::NowNs();
        internal::RecordTime(internal::kTransferFromDeviceTime, end - start);
        if (internal::ObserverActive()) {
          internal::Observer().OnTransfer(
              {device_, false, shape_.byte_size(), start, end, status});
        }
        done.Set(status);
      });
  return done;
}

Future<Literal> Buffer::ToLiteral() {
  Future<Literal> future;
  auto literal = std::make_shared<Literal>(shape_);
  Event copied = ToHost(literal->untyped_data(), literal->size_bytes());
  copied.OnReady([future, literal](const absl::Status& status) {
    if (status.ok()) {
      future.Set(std::move(*literal));
    } else {
      future.Set(status);
    }
  });
  return future;
}

absl::StatusOr<std::shared_ptr<Buffer>> Buffer::CopyToDevice(Device* dst) {
  if (dst == nullptr || !dst->addressable()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CopyToDevice: destination ", dst == nullptr ? "null" : dst->ToString(),
        " is not addressable"));
  }
  BufferPtr copy = BufferAccess::CreatePending(shape_, dst);
  const Event source_ready = ready_;
  const int64_t bytes = shape_.byte_size();
  // The source's storage is read only after its ready event, which is
  // completed after the storage is set.
  dst->runtime()->stream().Enqueue(
      [copy, source_ready, bytes, self = shared_from_this(), this] {
        // Waiting for the source is not part of the copy's time.
        absl::Status status = source_ready.Await();
        const int64_t start = internal::NowNs();
        if (status.ok()) {
          auto storage = copy->device()->runtime()->memory().Allocate(bytes);
          status = storage.status();
          if (status.ok()) {
            std::memcpy((*storage)->data(), BufferAccess::Data(*this), bytes);
            BufferAccess::Define(*copy, *std::move(storage), status);
          }
        }
        if (!status.ok()) BufferAccess::Define(*copy, nullptr, status);
        if (internal::ObserverActive()) {
          internal::Observer().OnTransfer({copy->device(), true, bytes, start,
                                           internal::NowNs(), status, device_});
        }
      });
  return copy;
}

}  // namespace podscope::runtime
