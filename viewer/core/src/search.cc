// Search by name and stepping from hit to hit.
#include <algorithm>
#include <tuple>

#include "name_match.h"
#include "podscope/base/status_macros.h"
#include "podscope/viewer/analysis.h"

namespace podscope::viewer {
namespace {

using trace_format::EventKind;

auto Key(const SearchHit& h) {
  return std::make_tuple(h.start_ns, h.event.track, h.event.kind,
                         h.event.index);
}

SearchHit HitOf(const TraceStore& store, const EventRef& e) {
  return {e, store.StartOf(e), store.DurationOf(e), store.NameOf(e)};
}

absl::StatusOr<std::vector<char>> Matches(const TraceStore& store,
                                          const SearchQuery& query) {
  return internal::MatchNames(store, {query.text}, query.regex,
                              query.case_sensitive);
}

bool Matched(const std::vector<char>& m, StringId id) {
  return id < m.size() && m[id];
}

}  // namespace

absl::StatusOr<std::vector<SearchHit>> Search(const TraceStore& store,
                                              const SearchQuery& query) {
  PODSCOPE_ASSIGN_OR_RETURN(const std::vector<char> m, Matches(store, query));
  std::vector<SearchHit> hits;
  if (query.limit == 0) return hits;
  for (TrackId t : internal::TracksOrAll(store, query.tracks)) {
    const TrackData& d = store.data(t);
    const SliceColumns& s = d.slices;
    // Each depth is in start order, so its first `limit` matches are all
    // that can make the overall first `limit`.
    for (uint32_t depth = 0; depth < s.depth_count(); ++depth) {
      uint32_t i = s.FirstStartingAtOrAfter(s.depth_begin(depth),
                                            s.depth_end(depth), query.t0);
      size_t taken = 0;
      for (; i < s.depth_end(depth) && taken < query.limit; ++i) {
        const int64_t start = s.start(i);
        if (start >= query.t1) break;
        if (!Matched(m, s.name(i))) continue;
        hits.push_back(
            {{t, EventKind::kSlice, i}, start, s.duration(i), s.name(i)});
        ++taken;
      }
    }
    const auto& ts = d.instants.ts;
    size_t taken = 0;
    for (size_t i =
             std::lower_bound(ts.begin(), ts.end(), query.t0) - ts.begin();
         i < ts.size() && ts[i] < query.t1 && taken < query.limit; ++i) {
      if (!Matched(m, d.instants.names[i])) continue;
      hits.push_back({{t, EventKind::kInstant, static_cast<uint32_t>(i)},
                      ts[i],
                      0,
                      d.instants.names[i]});
      ++taken;
    }
  }
  auto before = [](const SearchHit& a, const SearchHit& b) {
    return Key(a) < Key(b);
  };
  if (hits.size() > query.limit) {
    std::nth_element(hits.begin(), hits.begin() + query.limit, hits.end(),
                     before);
    hits.resize(query.limit);
  }
  std::sort(hits.begin(), hits.end(), before);
  return hits;
}

absl::StatusOr<std::optional<SearchHit>> SearchStep(const TraceStore& store,
                                                    const SearchQuery& query,
                                                    const EventRef& from,
                                                    bool forward) {
  PODSCOPE_ASSIGN_OR_RETURN(const std::vector<char> m, Matches(store, query));
  const SearchHit origin = HitOf(store, from);
  std::optional<SearchHit> best;
  auto consider = [&](const SearchHit& h) {
    if (forward ? Key(h) <= Key(origin) : Key(h) >= Key(origin)) return false;
    if (!best || (forward ? Key(h) < Key(*best) : Key(h) > Key(*best))) {
      best = h;
    }
    return true;
  };
  // Stop a scan once it is past the best hit found so far.
  auto beyond = [&](int64_t start) {
    return best && (forward ? start > best->start_ns : start < best->start_ns);
  };
  for (TrackId t : internal::TracksOrAll(store, query.tracks)) {
    const TrackData& d = store.data(t);
    const SliceColumns& s = d.slices;
    for (uint32_t depth = 0; depth < s.depth_count(); ++depth) {
      const uint32_t lo = s.depth_begin(depth), hi = s.depth_end(depth);
      if (forward) {
        for (uint32_t i = s.FirstStartingAtOrAfter(lo, hi, origin.start_ns);
             i < hi && !beyond(s.start(i)); ++i) {
          if (Matched(m, s.name(i)) &&
              consider(HitOf(store, {t, EventKind::kSlice, i}))) {
            break;
          }
        }
      } else {
        const int64_t after =
            origin.start_ns == kEndOfTime ? kEndOfTime : origin.start_ns + 1;
        for (uint32_t i = s.FirstStartingAtOrAfter(lo, hi, after);
             i > lo && !beyond(s.start(i - 1)); --i) {
          if (Matched(m, s.name(i - 1)) &&
              consider(HitOf(store, {t, EventKind::kSlice, i - 1}))) {
            break;
          }
        }
      }
    }
    const auto& ts = d.instants.ts;
    if (forward) {
      for (size_t i = std::lower_bound(ts.begin(), ts.end(), origin.start_ns) -
                      ts.begin();
           i < ts.size() && !beyond(ts[i]); ++i) {
        if (Matched(m, d.instants.names[i]) &&
            consider(HitOf(
                store, {t, EventKind::kInstant, static_cast<uint32_t>(i)}))) {
          break;
        }
      }
    } else {
      for (size_t i = std::upper_bound(ts.begin(), ts.end(), origin.start_ns) -
                      ts.begin();
           i > 0 && !beyond(ts[i - 1]); --i) {
        if (Matched(m, d.instants.names[i - 1]) &&
            consider(HitOf(store, {t, EventKind::kInstant,
                                   static_cast<uint32_t>(i - 1)}))) {
          break;
        }
      }
    }
  }
  return best;
}

}  // namespace podscope::viewer
