#ifndef PODSCOPE_RUNTIME_LOADER_H_
#define PODSCOPE_RUNTIME_LOADER_H_

// A parallel device loader, like torch_xla's MpDeviceLoader: background
// threads prepare the next batches on the host and transfer them to each
// device while the current step computes.
//
// Contract:
// - `produce(i)` makes batch i: for each device (in `devices` order) the
//   host arrays it gets. It runs on the loader threads, for increasing i,
//   possibly several at once (it must be thread-safe); OUT_OF_RANGE ends
//   the data (batches after it are not delivered).
// - Next() returns the batches in order, i = 0, 1, ..., as buffers on the
//   devices (their transfers enqueued on each device's stream), then
//   OUT_OF_RANGE at the end, or the producer's first other error.
// - At most `prefetch` batches are prepared ahead of the one Next() will
//   return; a thread waits rather than run further ahead.
// - Close() (also the destructor) stops the threads: batches in flight are
//   finished or dropped, none is started after it; Next() then returns
//   CANCELLED.
// - Tracing: each prepared batch is a "loader_prepare" scope (arg batch)
//   on a "loader N" thread; its transfers are TransferToDevice slices on
//   the devices' transfer tracks.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/literal.h"
#include "podscope/runtime/pjrt/buffer.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::runtime {

struct LoaderOptions {
  int prefetch = 2;  // batches prepared ahead, >= 1
  int threads = 1;   // loader threads, >= 1
};

class ParallelLoader {
 public:
  // Per device, the arrays of one batch.
  using Batch = std::vector<std::vector<Literal>>;
  using DeviceBatch = std::vector<std::vector<BufferPtr>>;
  using Producer = std::function<absl::StatusOr<Batch>(int64_t index)>;

  static absl::StatusOr<std::unique_ptr<ParallelLoader>> Create(
      Client* client, absl::Span<Device* const> devices, Producer produce,
      const LoaderOptions& options = {});
  ~ParallelLoader();
  ParallelLoader(const ParallelLoader&) = delete;
  ParallelLoader& operator=(const ParallelLoader&) = delete;

  absl::StatusOr<DeviceBatch> Next();
  void Close();

 private:
  struct State;
  explicit ParallelLoader(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_LOADER_H_
