#include "store_overview.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis_pod_util.h"
#include "podscope/base/status_macros.h"
#include "podscope/base/strings.h"
#include "podscope/viewer/step_names.h"
#include "store_append.h"

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

// Every track's slices of a file, as the reader decodes them, and the
// span of all its events on the file's own clock (first > last: none).
struct DecodedFile {
  absl::flat_hash_map<uint32_t, std::vector<tf::Slice>> slices;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
};

DecodedFile DecodeFile(const tf::TraceReader& reader,
                       const std::atomic<bool>* cancel, uint64_t* events) {
  DecodedFile d;
  for (size_t i = 0; i < reader.chunks().size(); ++i) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) break;
    auto decoded = reader.DecodeChunk(i);
    if (!decoded.ok()) continue;  // in the file's recovery report
    for (tf::TrackEvents& e : *decoded) {
      *events += e.event_count();
      for (const tf::Instant& x : e.instants) {
        d.first = std::min(d.first, x.ts_ns);
        d.last = std::max(d.last, x.ts_ns);
      }
      for (const tf::CounterSample& x : e.counters) {
        d.first = std::min(d.first, x.ts_ns);
        d.last = std::max(d.last, x.ts_ns);
      }
      if (e.slices.empty()) continue;
      for (const tf::Slice& s : e.slices) {
        d.first = std::min(d.first, s.start_ns);
        d.last = std::max(d.last, s.end_ns());
      }
      // Chunks hold slices in reader order: merged, a track's stay so.
      AppendRun(&d.slices[e.track_id], std::move(e.slices), tf::SliceOrder);
    }
  }
  return d;
}

bool HasDeviceStreams(const tf::TraceReader& reader, const DecodedFile& d) {
  bool any_device = false;
  for (const auto& [id, list] : d.slices) {
    const tf::proto::Track* t = reader.FindTrack(id);
    any_device |=
        t != nullptr && t->kind() == tf::proto::TRACK_KIND_DEVICE_STREAM;
  }
  return any_device;
}

// Sweeps a file's tracks into its overview: the outermost step slices of
// its threads, and per bin the busiest counted track's share of the bin
// covered by its slices.
class OverviewSweep {
 public:
  // [first, last): the file's span on the store's clock.
  OverviewSweep(const tf::TraceReader& reader, ClockMapper* clock,
                int64_t first, int64_t last)
      : reader_(reader), clock_(clock), is_step_(reader.string_count(), -1) {
    o_.first_ns = first;
    o_.bin_ns = std::max<int64_t>(
        1, (last - first + static_cast<int64_t>(kOverviewBins) - 1) /
               static_cast<int64_t>(kOverviewBins));
    const size_t bins = static_cast<size_t>((last - first) / o_.bin_ns + 1);
    o_.busy.assign(std::min(bins, kOverviewBins), 0);
    covered_.resize(o_.busy.size());
    busiest_.assign(o_.busy.size(), 0);
  }

  // `counts`: the track's time counts toward busy (device streams when
  // there are any, else threads).
  void AddTrack(const std::vector<tf::Slice>& list, bool thread, bool counts) {
    std::fill(covered_.begin(), covered_.end(), 0);
    int64_t run_start = 0, run_end = std::numeric_limits<int64_t>::min();
    int64_t step_end = std::numeric_limits<int64_t>::min();
    for (const tf::Slice& s : list) {
      const int64_t start = ToStore(s.start_ns);
      const int64_t end = std::max(start, ToStore(s.end_ns()));
      if (thread && start >= step_end && IsStep(s.name)) {
        o_.steps.emplace_back(start, end);
        step_end = end;
      }
      if (!counts) continue;
      // The union of the slices: the outermost ones, merged.
      if (start > run_end) {
        if (run_end > run_start) Cover(run_start, run_end);
        run_start = start;
        run_end = end;
      } else {
        run_end = std::max(run_end, end);
      }
    }
    if (!counts) return;
    if (run_end > run_start) Cover(run_start, run_end);
    for (size_t b = 0; b < covered_.size(); ++b) {
      busiest_[b] = std::max(busiest_[b], static_cast<float>(covered_[b]) /
                                              static_cast<float>(o_.bin_ns));
    }
  }

  ProcessOverview Finish() && {
    for (size_t b = 0; b < busiest_.size(); ++b) {
      o_.busy[b] = static_cast<uint8_t>(
          std::clamp(busiest_[b] * 255.0f + 0.5f, 0.0f, 255.0f));
    }
    std::sort(o_.steps.begin(), o_.steps.end());
    return std::move(o_);
  }

 private:
  int64_t ToStore(int64_t t) {
    return clock_ != nullptr ? clock_->ToReference(t) : t;
  }

  bool IsStep(uint32_t name) {
    if (name >= is_step_.size()) return false;
    char& known = is_step_[name];
    if (known < 0) known = IsStepName(reader_.GetString(name));
    return known != 0;
  }

  void Cover(int64_t start, int64_t end) {
    internal::Cover(start, end, o_.first_ns, o_.bin_ns, &covered_);
  }

  const tf::TraceReader& reader_;
  ClockMapper* clock_;
  ProcessOverview o_;
  std::vector<char> is_step_;     // by file string id; -1: not decided yet
  std::vector<int64_t> covered_;  // the current track's ns per bin
  std::vector<float> busiest_;
};

}  // namespace

std::optional<ProcessOverview> SummarizeIndex(const tf::TraceReader& reader,
                                              ClockMapper* clock,
                                              uint64_t* events) {
  *events = 0;
  bool any_device = false;
  for (const tf::proto::Track& t : reader.tracks()) {
    any_device |= t.kind() == tf::proto::TRACK_KIND_DEVICE_STREAM;
  }
  auto counts = [&](uint32_t track_id) {
    const tf::proto::Track* t = reader.FindTrack(track_id);
    const auto kind = t != nullptr ? t->kind() : tf::proto::TRACK_KIND_THREAD;
    return any_device ? kind == tf::proto::TRACK_KIND_DEVICE_STREAM
                      : kind == tf::proto::TRACK_KIND_THREAD ||
                            kind == tf::proto::TRACK_KIND_UNSPECIFIED;
  };
  auto to_store = [&](int64_t t) {
    return clock != nullptr ? clock->ToReference(t) : t;
  };
  // Per counted track, the spans its chunks cover on the store's clock.
  absl::flat_hash_map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> spans;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const tf::ChunkInfo& c : reader.chunks()) {
    // An unindexed chunk's ranges are known only once it is decoded.
    if (!c.ranges_known) return std::nullopt;
    *events += c.event_count;
    if (c.event_count == 0) continue;
    first = std::min(first, to_store(c.min_ns));
    last = std::max(last, to_store(c.max_ns));
    for (const tf::proto::TrackRange& r : c.tracks) {
      if (r.event_count() == 0 || !counts(r.track_id())) continue;
      spans[r.track_id()].emplace_back(to_store(r.min_ns()),
                                       to_store(r.max_ns()));
    }
  }
  ProcessOverview o;
  o.exact = false;
  if (first > last) return o;
  if (last <= first) last = first + 1;
  o.first_ns = first;
  o.bin_ns = std::max<int64_t>(
      1, (last - first + static_cast<int64_t>(kOverviewBins) - 1) /
             static_cast<int64_t>(kOverviewBins));
  const size_t bins = std::min(
      kOverviewBins, static_cast<size_t>((last - first) / o.bin_ns + 1));
  std::vector<float> busiest(bins, 0);
  std::vector<int64_t> covered(bins);
  for (auto& [id, list] : spans) {
    std::sort(list.begin(), list.end());
    std::fill(covered.begin(), covered.end(), 0);
    int64_t run_start = 0, run_end = std::numeric_limits<int64_t>::min();
    for (const auto& [start, end] : list) {
      if (start > run_end) {
        if (run_end > run_start) {
          Cover(run_start, run_end, first, o.bin_ns, &covered);
        }
        run_start = start;
        run_end = end;
      } else {
        run_end = std::max(run_end, end);
      }
    }
    if (run_end > run_start)
      Cover(run_start, run_end, first, o.bin_ns, &covered);
    for (size_t b = 0; b < bins; ++b) {
      busiest[b] = std::max(busiest[b], static_cast<float>(covered[b]) /
                                            static_cast<float>(o.bin_ns));
    }
  }
  o.busy.resize(bins);
  for (size_t b = 0; b < bins; ++b) {
    o.busy[b] = static_cast<uint8_t>(
        std::clamp(busiest[b] * 255.0f + 0.5f, 0.0f, 255.0f));
  }
  return o;
}

ProcessOverview SummarizeTrace(const tf::TraceReader& reader,
                               ClockMapper* clock,
                               const std::atomic<bool>* cancel,
                               uint64_t* events) {
  *events = 0;
  const DecodedFile d = DecodeFile(reader, cancel, events);
  if (d.first > d.last) return ProcessOverview();
  auto to_store = [&](int64_t t) {
    return clock != nullptr ? clock->ToReference(t) : t;
  };
  const int64_t first = to_store(d.first);
  int64_t last = to_store(d.last);
  if (last <= first) last = first + 1;

  OverviewSweep sweep(reader, clock, first, last);
  const bool any_device = HasDeviceStreams(reader, d);
  for (const auto& [id, list] : d.slices) {
    const tf::proto::Track* t = reader.FindTrack(id);
    const auto kind = t != nullptr ? t->kind() : tf::proto::TRACK_KIND_THREAD;
    const bool thread = kind == tf::proto::TRACK_KIND_THREAD ||
                        kind == tf::proto::TRACK_KIND_UNSPECIFIED;
    sweep.AddTrack(
        list, thread,
        any_device ? kind == tf::proto::TRACK_KIND_DEVICE_STREAM : thread);
  }
  return std::move(sweep).Finish();
}

}  // namespace internal
void TraceStore::SetOverviews(
    const std::vector<
        std::pair<ProcessId, std::shared_ptr<const ProcessOverview>>>&
        overviews) {
  for (const auto& [p, o] : overviews) {
    if (p < processes_.size() && !processes_[p].detail && o != nullptr) {
      processes_[p].overview = o;
    }
  }
  StoreAppender::Finish(this);
}

absl::StatusOr<std::shared_ptr<const ProcessOverview>> SummarizeProcessFile(
    const std::string& path, bool align_clocks,
    const std::atomic<bool>* cancel) {
  PODSCOPE_ASSIGN_OR_RETURN(auto reader, tf::TraceReader::Open(path));
  ClockMapper clock((*reader).clock());
  uint64_t events = 0;
  auto o = std::make_shared<ProcessOverview>(internal::SummarizeTrace(
      *reader, align_clocks && clock.has_reference() ? &clock : nullptr, cancel,
      &events));
  if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
    return absl::CancelledError(
        absl::StrCat("summarizing ", path, " cancelled"));
  }
  return std::shared_ptr<const ProcessOverview>(std::move(o));
}

}  // namespace podscope::viewer
