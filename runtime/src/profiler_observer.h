#ifndef PODSCOPE_RUNTIME_SRC_PROFILER_OBSERVER_H_
#define PODSCOPE_RUNTIME_SRC_PROFILER_OBSERVER_H_

// The runtime's report to the profiler: a RuntimeObserver that records
// device work into podscope::profiler's recording API while a session
// records (and costs one relaxed load per callback when none does).
//
// What a trace shows (see docs/runtime.md):
//   "device N (CPU) stream" (stream 0): every kernel, named
//       "<scope>/<op_name>" (or "<op_name>" outside any ScopedName), args
//       graph_hash, fused_ops, op (the op kind), flops and bytes_accessed
//       (op_cost.h); the first kernel of an execution ends the flow that
//       the host "Execute" scope started.
//   "device N transfers" (stream 1): TransferToDevice / TransferFromDevice
//       with a bytes arg, and CopyFromDevice (a copy from device
//       `from_device` into N).
//   "device N lazy step" (counter): the step number, set at each
//       LazyContext::Sync. A counter rather than a slice, so that step-time
//       analyses (which take slices whose name contains "step") see only
//       the user's own step scopes.
//   "device N allocations" (stream 2): an instant "Allocate" (buffer_id,
//       bytes, in_use, op, scope) per allocation and "Free" (buffer_id,
//       bytes, in_use) per release.
//   "device N memory in use" (counter, bytes): the device's accounted
//       memory after every allocation and release.
//   "runtime <metric>" (counter, one per metric of metrics.h): timers
//       (CompileTime, ExecuteTime, TransferToDeviceTime,
//       TransferFromDeviceTime) get each sample in ns when it is taken;
//       counters (CachedCompile, UncachedCompile, StepCount) get their
//       process-wide total at each increment.
// Host scopes "Compile" (graph_hash, cache_hit, signature, graph_ops, step)
// and "Execute" (graph_hash)
// are recorded directly with profiler::Trace in client.cc / executable.cc.

#include "absl/types/span.h"
#include "podscope/profiler/recorder.h"
#include "podscope/runtime/pjrt/device.h"

namespace podscope::runtime::internal {

// Called by Client::Create: tells the profiler this process's index and
// count, describes each addressable device once per process, registers its
// tracks, and installs the profiler observer unless another observer is
// installed. The observer lives for the process.
void AttachProfiler(int process_index, int process_count,
                    absl::Span<Device* const> addressable_devices);

// The "device N (CPU) stream" track of `device` (registered on first use),
// for device work recorded outside the observer: collectives.
profiler::TrackHandle StreamTrackOf(const Device& device);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_PROFILER_OBSERVER_H_
