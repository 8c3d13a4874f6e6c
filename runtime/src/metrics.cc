#include "podscope/runtime/metrics.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "instrumentation.h"
#include "metrics_internal.h"

namespace podscope::runtime {
namespace {

constexpr size_t kMaxRecentSamples = 1024;

struct TimerState {
  MetricData data;
  std::vector<int64_t> recent;  // ring buffer
  size_t next = 0;
};

struct Registry {
  std::mutex mu;
  std::map<std::string, TimerState, std::less<>> timers;
  std::map<std::string, int64_t, std::less<>> counters;
};

Registry& GetRegistry() {
  static Registry* const registry = new Registry();
  return *registry;
}

int64_t Percentile(std::vector<int64_t> samples, double q) {
  if (samples.empty()) return 0;
  const size_t index = std::min(
      samples.size() - 1, static_cast<size_t>(q * (samples.size() - 1) + 0.5));
  std::nth_element(samples.begin(), samples.begin() + index, samples.end());
  return samples[index];
}

std::string FormatDuration(int64_t ns) {
  if (ns >= 1000000000) return absl::StrFormat("%.3fs", ns / 1e9);
  if (ns >= 1000000) return absl::StrFormat("%.3fms", ns / 1e6);
  if (ns >= 1000) return absl::StrFormat("%.3fus", ns / 1e3);
  return absl::StrCat(ns, "ns");
}

void AddSample(TimerState& state, int64_t ns) {
  MetricData& data = state.data;
  data.min_ns = data.total_samples == 0 ? ns : std::min(data.min_ns, ns);
  data.max_ns = std::max(data.max_ns, ns);
  ++data.total_samples;
  data.accumulator_ns += ns;
  if (state.recent.size() < kMaxRecentSamples) {
    state.recent.push_back(ns);
  } else {
    state.recent[state.next] = ns;
    state.next = (state.next + 1) % kMaxRecentSamples;
  }
}

}  // namespace

namespace internal {

void RecordTime(std::string_view metric, int64_t ns) {
  Registry& registry = GetRegistry();
  int64_t now = 0;
  {
    std::lock_guard<std::mutex> lock(registry.mu);
    auto it = registry.timers.find(metric);
    if (it == registry.timers.end()) {
      it = registry.timers.emplace(std::string(metric), TimerState()).first;
    }
    AddSample(it->second, ns);
    if (ObserverActive()) now = NowNs();
  }
  // Outside the lock: the observer may take its own.
  if (now != 0) {
    Observer().OnMetric({metric, true, static_cast<double>(ns), now});
  }
}

void IncrementCounter(std::string_view counter, int64_t delta) {
  Registry& registry = GetRegistry();
  int64_t total = 0;
  int64_t now = 0;
  {
    std::lock_guard<std::mutex> lock(registry.mu);
    auto it = registry.counters.find(counter);
    if (it == registry.counters.end()) {
      it = registry.counters.emplace(std::string(counter), 0).first;
    }
    it->second += delta;
    total = it->second;
    // Taken under the lock, so a counter's samples rise with their times
    // even when threads increment it concurrently.
    if (ObserverActive()) now = NowNs();
  }
  if (now != 0) {
    Observer().OnMetric({counter, false, static_cast<double>(total), now});
  }
}

}  // namespace internal

MetricData MetricsSnapshot::metric(std::string_view name) const {
  auto it = metrics.find(std::string(name));
  return it == metrics.end() ? MetricData() : it->second;
}

int64_t MetricsSnapshot::counter(std::string_view name) const {
  auto it = counters.find(std::string(name));
  return it == counters.end() ? 0 : it->second;
}

MetricsSnapshot Metrics() {
  Registry& registry = GetRegistry();
  MetricsSnapshot snapshot;
  std::lock_guard<std::mutex> lock(registry.mu);
  for (const auto& [name, state] : registry.timers) {
    MetricData data = state.data;
    data.p50_ns = Percentile(state.recent, 0.50);
    data.p90_ns = Percentile(state.recent, 0.90);
    data.p99_ns = Percentile(state.recent, 0.99);
    snapshot.metrics.emplace(name, data);
  }
  for (const auto& [name, value] : registry.counters) {
    snapshot.counters.emplace(name, value);
  }
  return snapshot;
}

std::string MetricsReport(const MetricsSnapshot& snapshot) {
  std::string out;
  for (const auto& [name, data] : snapshot.metrics) {
    const int64_t mean =
        data.total_samples == 0 ? 0 : data.accumulator_ns / data.total_samples;
    absl::StrAppend(&out, "Metric: ", name, "\n",
                    "  TotalSamples: ", data.total_samples, "\n",
                    "  Accumulator: ", FormatDuration(data.accumulator_ns),
                    "\n", "  Mean: ", FormatDuration(mean), "\n",
                    "  Min: ", FormatDuration(data.min_ns), "\n",
                    "  Max: ", FormatDuration(data.max_ns), "\n",
                    "  Percentiles: 50%=", FormatDuration(data.p50_ns),
                    "; 90%=", FormatDuration(data.p90_ns),
                    "; 99%=", FormatDuration(data.p99_ns), "\n");
  }
  for (const auto& [name, value] : snapshot.counters) {
    absl::StrAppend(&out, "Counter: ", name, "\n  Value: ", value, "\n");
  }
  return out;
}

std::string MetricsReport() { return MetricsReport(Metrics()); }

void ResetMetrics() {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  registry.timers.clear();
  registry.counters.clear();
}

}  // namespace podscope::runtime
