#include "track_merge.h"

#include <algorithm>
#include <utility>

#include "podscope/base/huge_pages.h"
#include "podscope/trace_format/chunk_codec.h"

namespace podscope::viewer::internal {
namespace tf = trace_format;

namespace {

void ClearKeepingCapacity(tf::TrackEvents* e) {
  e->track_id = 0;
  e->slices.clear();
  e->instants.clear();
  e->counters.clear();
  e->samples.clear();
  e->args.clear();
  e->flows.clear();
}

template <typename T>
void Append(std::vector<T>* out, const std::vector<T>& part) {
  if (out->size() + part.size() > out->capacity()) {
    base::ReserveHuge(out,
                      std::max(out->size() + part.size(), 2 * out->capacity()));
  }
  out->insert(out->end(), part.begin(), part.end());
}

// Merges each run into the sorted runs before it where they overlap,
// exactly as appending them one at a time did (a chunk's parents that were
// written in the next chunk land a few events back, so this is linear for
// a recorder's files).
template <typename T, typename Less>
void MergeRuns(std::vector<T>* v, const std::vector<size_t>& starts,
               Less less) {
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t old = starts[k];
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : v->size();
    if (old == end || old == 0 || !less((*v)[old], (*v)[old - 1])) continue;
    auto from = std::upper_bound(v->begin(), v->begin() + old, (*v)[old], less);
    std::inplace_merge(from, v->begin() + old, v->begin() + end, less);
  }
}

}  // namespace

TrackMerger::TrackMerger(tf::TrackEvents buffers, uint64_t expected)
    : out_(std::move(buffers)), expected_(expected) {
  ClearKeepingCapacity(&out_);
}

void TrackMerger::Add(const tf::TrackEvents& part) {
  if (runs_.empty()) {
    out_.track_id = part.track_id;
    // A track is nearly always of one kind (a thread's slices, a
    // counter's samples): the kinds of its first part get the room the
    // index counted, the others (if any) grow as they come.
    if (expected_ > 0) {
      auto reserve = [&](auto& column, const auto& first) {
        if (!first.empty()) base::ReserveHuge(&column, expected_);
      };
      reserve(out_.slices, part.slices);
      reserve(out_.instants, part.instants);
      reserve(out_.counters, part.counters);
      reserve(out_.samples, part.samples);
    }
  }
  const RunStart run{out_.slices.size(), out_.instants.size(),
                     out_.counters.size(), out_.samples.size()};
  // Argument and flow indices move with their events, as the reader's
  // MergeTrackEvents moves them.
  auto base = [&](tf::EventKind k) {
    return static_cast<uint32_t>(k == tf::EventKind::kSlice ? run.slices
                                                            : run.instants);
  };
  for (const tf::EventArgs& a : part.args) {
    out_.args.push_back(a);
    out_.args.back().index += base(a.kind);
  }
  for (const tf::FlowLink& f : part.flows) {
    out_.flows.push_back(f);
    out_.flows.back().index += base(f.kind);
  }
  Append(&out_.slices, part.slices);
  Append(&out_.instants, part.instants);
  Append(&out_.counters, part.counters);
  Append(&out_.samples, part.samples);
  runs_.push_back(run);
}

tf::TrackEvents& TrackMerger::Finish() {
  if (runs_.empty()) return out_;
  if (!out_.args.empty() || !out_.flows.empty()) {
    // MergeTrackEvents: one part as it is, more sorted as a whole (its
    // depths are computed later, when the track becomes columns).
    if (runs_.size() > 1) tf::SortTrackEvents(&out_);
    return out_;
  }
  std::vector<size_t> starts(runs_.size());
  auto merge = [&](auto& column, auto member, auto less) {
    for (size_t k = 0; k < runs_.size(); ++k) starts[k] = runs_[k].*member;
    MergeRuns(&column, starts, less);
  };
  auto by_ts = [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; };
  merge(out_.slices, &RunStart::slices, tf::SliceOrder);
  merge(out_.instants, &RunStart::instants, by_ts);
  merge(out_.counters, &RunStart::counters, by_ts);
  merge(out_.samples, &RunStart::samples, by_ts);
  return out_;
}

tf::TrackEvents TrackBuffers::Take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (held_.empty()) return {};
  auto largest = std::max_element(
      held_.begin(), held_.end(), [](const auto& a, const auto& b) {
        return a.slices.capacity() < b.slices.capacity();
      });
  std::iter_swap(largest, held_.end() - 1);
  tf::TrackEvents e = std::move(held_.back());
  held_.pop_back();
  return e;
}

void TrackBuffers::Give(tf::TrackEvents events) {
  ClearKeepingCapacity(&events);
  std::lock_guard<std::mutex> lock(mutex_);
  held_.push_back(std::move(events));
}

}  // namespace podscope::viewer::internal
