#include "store_overview.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis_pod_util.h"
#include "podscope/base/strings.h"
#include "podscope/viewer/step_names.h"

namespace podscope::viewer {
namespace tf = trace_format;

float ProcessOverview::BusyIn(int64_t t0, int64_t t1) const {
  if (busy.empty() || bin_ns <= 0 || t1 <= t0) return 0;
  const int64_t lo = std::max(t0, first_ns);
  const int64_t hi = std::min(t1, last_ns());
  if (hi <= lo) return 0;
  const size_t b0 = static_cast<size_t>((lo - first_ns) / bin_ns);
  const size_t b1 = std::min(busy.size() - 1,
                             static_cast<size_t>((hi - 1 - first_ns) / bin_ns));
  double covered = 0;
  for (size_t b = b0; b <= b1; ++b) {
    const int64_t bs = first_ns + static_cast<int64_t>(b) * bin_ns;
    const int64_t overlap = std::min(hi, bs + bin_ns) - std::max(lo, bs);
    covered += static_cast<double>(overlap) * busy[b];
  }
  return static_cast<float>(covered / 255.0 / static_cast<double>(t1 - t0));
}

namespace internal {
namespace {

// Adds the time [start, end) covers to `bins` (nanoseconds per bin).
void Cover(int64_t start, int64_t end, int64_t first, int64_t bin_ns,
           std::vector<int64_t>* bins) {
  start = std::max(start, first);
  if (end <= start) return;
  size_t b = static_cast<size_t>((start - first) / bin_ns);
  while (start < end && b < bins->size()) {
    const int64_t bin_end = first + static_cast<int64_t>(b + 1) * bin_ns;
    const int64_t stop = std::min(end, bin_end);
    (*bins)[b] += stop - start;
    start = stop;
    ++b;
  }
}

}  // namespace

ProcessOverview SummarizeTrace(const tf::TraceReader& reader,
                               ClockMapper* clock,
                               const std::atomic<bool>* cancel,
                               uint64_t* events) {
  *events = 0;
  // Each track's slices, as the reader decodes them.
  absl::flat_hash_map<uint32_t, std::vector<tf::Slice>> slices;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  auto to_store = [&](int64_t t) {
    return clock != nullptr ? clock->ToReference(t) : t;
  };
  for (size_t i = 0; i < reader.chunks().size(); ++i) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) break;
    auto decoded = reader.DecodeChunk(i);
    if (!decoded.ok()) continue;  // in the file's recovery report
    for (tf::TrackEvents& e : *decoded) {
      *events += e.event_count();
      for (const tf::Instant& x : e.instants) {
        first = std::min(first, x.ts_ns);
        last = std::max(last, x.ts_ns);
      }
      for (const tf::CounterSample& x : e.counters) {
        first = std::min(first, x.ts_ns);
        last = std::max(last, x.ts_ns);
      }
      if (e.slices.empty()) continue;
      for (const tf::Slice& s : e.slices) {
        first = std::min(first, s.start_ns);
        last = std::max(last, s.end_ns());
      }
      // Chunks hold slices in reader order: merged, a track's stay so.
      AppendRun(&slices[e.track_id], std::move(e.slices), tf::SliceOrder);
    }
  }
  ProcessOverview o;
  if (first > last) return o;
  first = to_store(first);
  last = to_store(last);
  if (last <= first) last = first + 1;
  o.first_ns = first;
  o.bin_ns = std::max<int64_t>(
      1, (last - first + static_cast<int64_t>(kOverviewBins) - 1) /
             static_cast<int64_t>(kOverviewBins));
  const size_t bins = static_cast<size_t>((last - first) / o.bin_ns + 1);
  o.busy.assign(std::min(bins, kOverviewBins), 0);

  // Device streams when there are any, else threads.
  bool any_device = false;
  for (const auto& [id, list] : slices) {
    const tf::proto::Track* t = reader.FindTrack(id);
    any_device |=
        t != nullptr && t->kind() == tf::proto::TRACK_KIND_DEVICE_STREAM;
  }
  std::vector<char> is_step(reader.string_count(), -1);
  std::vector<int64_t> covered(o.busy.size());
  std::vector<float> busiest(o.busy.size(), 0);
  for (auto& [id, list] : slices) {
    const tf::proto::Track* t = reader.FindTrack(id);
    const auto kind = t != nullptr ? t->kind() : tf::proto::TRACK_KIND_THREAD;
    const bool thread = kind == tf::proto::TRACK_KIND_THREAD ||
                        kind == tf::proto::TRACK_KIND_UNSPECIFIED;
    const bool counts =
        any_device ? kind == tf::proto::TRACK_KIND_DEVICE_STREAM : thread;
    std::fill(covered.begin(), covered.end(), 0);
    int64_t run_start = 0, run_end = std::numeric_limits<int64_t>::min();
    int64_t step_end = std::numeric_limits<int64_t>::min();
    for (const tf::Slice& s : list) {
      const int64_t start = to_store(s.start_ns);
      const int64_t end = std::max(start, to_store(s.end_ns()));
      if (thread && start >= step_end) {
        bool step = false;
        if (s.name < is_step.size()) {
          char& known = is_step[s.name];
          if (known < 0) known = IsStepName(reader.GetString(s.name));
          step = known != 0;
        }
        if (step) {
          o.steps.emplace_back(start, end);
          step_end = end;
        }
      }
      if (!counts) continue;
      // The union of the slices: the outermost ones, merged.
      if (start > run_end) {
        if (run_end > run_start)
          Cover(run_start, run_end, first, o.bin_ns, &covered);
        run_start = start;
        run_end = end;
      } else {
        run_end = std::max(run_end, end);
      }
    }
    if (!counts) continue;
    if (run_end > run_start)
      Cover(run_start, run_end, first, o.bin_ns, &covered);
    for (size_t b = 0; b < covered.size(); ++b) {
      busiest[b] = std::max(busiest[b], static_cast<float>(covered[b]) /
                                            static_cast<float>(o.bin_ns));
    }
  }
  for (size_t b = 0; b < busiest.size(); ++b) {
    o.busy[b] = static_cast<uint8_t>(
        std::clamp(busiest[b] * 255.0f + 0.5f, 0.0f, 255.0f));
  }
  std::sort(o.steps.begin(), o.steps.end());
  return o;
}

}  // namespace internal
}  // namespace podscope::viewer
