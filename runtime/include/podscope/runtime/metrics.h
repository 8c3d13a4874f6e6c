#ifndef PODSCOPE_RUNTIME_METRICS_H_
#define PODSCOPE_RUNTIME_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace podscope::runtime {

// A timing metric, like PyTorch/XLA's metrics report.
struct MetricData {
  int64_t total_samples = 0;
  int64_t accumulator_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  // Percentiles over the most recent samples (up to 1024).
  int64_t p50_ns = 0;
  int64_t p90_ns = 0;
  int64_t p99_ns = 0;
};

// Process-wide metrics at one moment. Timers: CompileTime, ExecuteTime,
// TransferToDeviceTime, TransferFromDeviceTime. Counters: CachedCompile,
// UncachedCompile, StepCount. While a profiler capture runs, each metric is
// also a counter track "runtime <name>" in the trace: a timer's samples (ns)
// as they are taken, a counter's total after each increment.
struct MetricsSnapshot {
  std::map<std::string, MetricData> metrics;
  std::map<std::string, int64_t> counters;

  // Zero-valued data for a metric that has no samples yet.
  MetricData metric(std::string_view name) const;
  int64_t counter(std::string_view name) const;
};

MetricsSnapshot Metrics();
// Text in the shape of torch_xla.debug.metrics.metrics_report().
std::string MetricsReport();
std::string MetricsReport(const MetricsSnapshot& snapshot);
// Clears every metric and counter (tests and per-phase reports).
void ResetMetrics();

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_METRICS_H_
