// SliceColumns::AppendAfter: a track's columns grown by slices that all come
// after it (see slice_columns.h). Each depth's old run is copied column by
// column; the indexes are computed as Build computes them.
#include <algorithm>
#include <memory>

#include "podscope/viewer/slice_columns.h"

namespace podscope::viewer {

SliceColumns SliceColumns::AppendAfter(
    const SliceColumns& old, std::span<const trace_format::Slice> fresh,
    std::vector<uint32_t>* where) {
  SliceColumns c;
  const uint32_t n_old = old.size();
  const size_t n = n_old + fresh.size();
  std::vector<uint32_t> fresh_per_depth;
  for (const trace_format::Slice& s : fresh) {
    if (s.depth >= fresh_per_depth.size()) fresh_per_depth.resize(s.depth + 1);
    ++fresh_per_depth[s.depth];
  }
  const uint32_t depths = std::max<uint32_t>(
      old.depth_count(), static_cast<uint32_t>(fresh_per_depth.size()));
  c.depth_begin_.assign(depths + 1, 0);
  for (uint32_t d = 0; d < depths; ++d) {
    const uint32_t had =
        d < old.depth_count() ? old.depth_end(d) - old.depth_begin(d) : 0;
    const uint32_t got = d < fresh_per_depth.size() ? fresh_per_depth[d] : 0;
    c.depth_begin_[d + 1] = c.depth_begin_[d] + had + got;
  }
  where->resize(n);
  std::unique_ptr<int64_t[]> starts(new int64_t[n]);
  c.durations_.resize(n);
  NameColumnBuilder names(n);
  // The old runs, moved to their depth's new beginning.
  std::vector<uint32_t> next(depths);
  size_t overflow = 0;
  for (uint32_t d = 0; d < old.depth_count(); ++d) {
    const uint32_t lo = old.depth_begin(d), hi = old.depth_end(d);
    const uint32_t to = c.depth_begin_[d];
    std::copy(old.durations_.begin() + lo, old.durations_.begin() + hi,
              c.durations_.begin() + to);
    for (uint32_t i = lo; i < hi; ++i) {
      names.Set(to + (i - lo), old.names_[i]);
      starts[to + (i - lo)] = old.start(i);
      (*where)[i] = to + (i - lo);
    }
    // Side-table entries of the run, in index order like the run.
    while (overflow < old.duration_overflow_.size() &&
           old.duration_overflow_[overflow].first < hi) {
      const auto& [i, v] = old.duration_overflow_[overflow++];
      c.duration_overflow_.push_back({to + (i - lo), v});
    }
    next[d] = to + (hi - lo);
  }
  for (uint32_t d = old.depth_count(); d < depths; ++d) {
    next[d] = c.depth_begin_[d];
  }
  for (size_t j = 0; j < fresh.size(); ++j) {
    const trace_format::Slice& s = fresh[j];
    const uint32_t k = next[s.depth]++;
    (*where)[n_old + j] = k;
    starts[k] = s.start_ns;
    names.Set(k, s.name);
    c.SetDuration(k, s.duration_ns);
  }

  c.names_ = std::move(names).Finish();
  c.BuildIndexes(starts.get(), n);
  return c;
}

}  // namespace podscope::viewer
