#ifndef PODSCOPE_RUNTIME_SRC_INSTRUMENTATION_H_
#define PODSCOPE_RUNTIME_SRC_INSTRUMENTATION_H_

// The one seam through which the runtime reports what it does. The
// profiler-backed observer (profiler_observer.h) is installed whenever a
// Client is created and no other observer is installed.
//
// Callbacks run on the thread where the work happened (device work on the
// device's stream thread), so a profiler can record them into that
// thread's buffer. Times are CLOCK_MONOTONIC nanoseconds (NowNs()).
// String views are valid only during the callback.

#include <atomic>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "podscope/runtime/pjrt/device.h"

namespace podscope::runtime::internal {

int64_t NowNs();

struct TransferEvent {
  const Device* device = nullptr;
  bool to_device = true;
  int64_t bytes = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  absl::Status status;
  // Set for a copy from another device (Buffer::CopyToDevice) into `device`.
  const Device* source = nullptr;
};

struct CompileEvent {
  uint64_t graph_fingerprint = 0;
  std::string_view graph_name;
  bool cache_hit = false;
  int num_nodes = 0;
  int num_kernels = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct ExecuteEvent {
  const Device* device = nullptr;
  uint64_t graph_fingerprint = 0;
  std::string_view graph_name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  absl::Status status;
};

// One kernel on a device stream. `scope` is the ScopedName path active when
// the kernel's (root) op was recorded; a trace names it "<scope>/<op_name>".
struct OpEvent {
  const Device* device = nullptr;
  uint64_t graph_fingerprint = 0;
  std::string_view op_name;  // "dot", or "fusion" for fused elementwise ops
  std::string_view scope;
  int num_fused_ops = 1;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // Non-zero on the first kernel of an execution launched while a profiler
  // session recorded: the flow that the host "Execute" scope started.
  uint64_t flow_id = 0;
  // The kernel's floating-point operations and bytes read + written
  // (op_cost.h).
  int64_t flops = 0;
  int64_t bytes_accessed = 0;
  // The output's shape and the operands' ("f32[64,10]"; operands separated
  // by spaces): an SPMD device kernel's local (shard) shapes.
  std::string_view shape;
  std::string_view operand_shapes;
};

// A lazy step boundary (LazyContext::Sync).
struct StepEvent {
  const Device* device = nullptr;
  int64_t step = 0;
  uint64_t graph_fingerprint = 0;  // 0 when the step had nothing to run
  int64_t time_ns = 0;
};

// A sample of a process-wide metric (metrics.h): a timer's sample, or a
// counter's total after an increment, so the last value a trace shows for
// a counter is what Metrics() reported at that moment.
struct MetricEvent {
  std::string_view name;  // "CompileTime", "CachedCompile", ...
  bool is_timer = false;
  double value = 0;  // timer: the sample in ns; counter: the new total
  int64_t time_ns = 0;
};

// A device's memory in use changed: an allocation (`allocated`) or the
// release of allocation `buffer_id`.
struct MemoryEvent {
  int device_id = 0;
  int64_t bytes_in_use = 0;  // after the change
  int64_t time_ns = 0;
  bool allocated = true;
  int64_t buffer_id = 0;  // unique per device, for the life of the process
  int64_t bytes = 0;
  // Allocations only: the op kind that produced the buffer ("transfer",
  // "parameter", "collective", "scratch" for others) and the ScopedName
  // path it was recorded under.
  std::string_view op;
  std::string_view scope;
};

class RuntimeObserver {
 public:
  virtual ~RuntimeObserver() = default;
  virtual void OnTransfer(const TransferEvent& event) {}
  virtual void OnCompile(const CompileEvent& event) {}
  virtual void OnExecute(const ExecuteEvent& event) {}
  virtual void OnOp(const OpEvent& event) {}
  virtual void OnStep(const StepEvent& event) {}
  virtual void OnMetric(const MetricEvent& event) {}
  // Called with the device's accounting lock held: must not allocate
  // device memory.
  virtual void OnMemory(const MemoryEvent& event) {}
};

// Installs `observer` (not owned; nullptr restores the no-op default). The
// caller keeps it alive until it is replaced and device work has drained.
void SetRuntimeObserver(RuntimeObserver* observer);
// Installs `observer` only if none is installed; true if it was installed.
// Clients install the profiler's observer this way, so an observer a test
// or tool installed stays in place.
bool SetRuntimeObserverIfUnset(RuntimeObserver* observer);
// The installed observer, or a no-op one.
RuntimeObserver& Observer();
// True when an observer is installed: lets hot paths skip timestamps.
bool ObserverActive();

// The LazyContext step number whose Sync runs on this thread (a Compile's
// `step` arg), or -1 outside any Sync.
int64_t CurrentLazyStep();
class ScopedLazyStep {
 public:
  explicit ScopedLazyStep(int64_t step);
  ~ScopedLazyStep();
  ScopedLazyStep(const ScopedLazyStep&) = delete;
  ScopedLazyStep& operator=(const ScopedLazyStep&) = delete;

 private:
  int64_t previous_;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_INSTRUMENTATION_H_
