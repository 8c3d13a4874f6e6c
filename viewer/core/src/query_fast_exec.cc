// query_fast.h: running a plan. The slices of a track lie in runs, one
// per depth, so a group key is (the track's class, the depth, the name):
// the class numbers the distinct values of the grouped track and process
// columns (host, thread, rank, pid, track), and only the name varies
// slice by slice. A run that needs no test per slice other than a dur
// range is summed by the track's name codes straight from the
// stored columns (ScanCodes); any other run slice by slice into slots by
// name. Either is flushed into the chunk's groups when the run ends;
// chunks of tracks run in parallel and merge in order. Sums are exact
// (128-bit) beside the sum of absolute values, which says whether
// SQLite's own summation, in whatever order it adds, gives the same number
// (query_fast_rows.cc).
#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "podscope/base/parallel.h"
#include "query_fast.h"
#include "query_fast_groups.h"
#include "query_tables.h"

namespace podscope::viewer::query {
namespace {

// One code of a track's name table over part of a run: the count and the
// durations as stored (below 2^32 each, so a block of 2^24 slices sums in
// 64 bits), plus what the saturated ones add beyond 2^32 - 1.
struct CodeAcc {
  uint64_t count = 0;
  uint64_t stored = 0;
  int128 extra = 0;
  int64_t min = kMax;
  int64_t max = kMin;
};
constexpr uint32_t kKernelBlock = uint32_t{1} << 24;

// The inner loop of the common case: a run's slices by name code, with
// no test per slice. Durations are never negative in the store, so their
// sum is their magnitude too.
template <typename Code, bool kDur, bool kMinMax, bool kRange>
void ScanCodes(const SliceColumns& s, const Code* codes, uint32_t lo,
               uint32_t hi, int64_t dur_low, int64_t dur_high, CodeAcc* acc) {
  const uint32_t* durations = s.stored_durations();
  for (uint32_t i = lo; i < hi; ++i) {
    uint32_t d = 0;
    int64_t full = 0;
    if constexpr (kDur || kRange) {
      d = durations[i];
      full = d;
      if (d == SliceColumns::kSaturated) [[unlikely]] {
        full = s.duration(i);
      }
    }
    if constexpr (kRange) {
      if (full < dur_low || full > dur_high) continue;
    }
    CodeAcc& a = acc[codes[i]];
    ++a.count;
    if constexpr (kDur) {
      a.stored += d;
      if (d == SliceColumns::kSaturated) [[unlikely]] {
        a.extra += int128(full) - d;
      }
      if constexpr (kMinMax) {
        a.min = std::min(a.min, full);
        a.max = std::max(a.max, full);
      }
    }
  }
}

// ScanCodes for statements that aggregate starts too: every duration's
// statistics, and the starts' by code into `ts`.
template <typename Code, bool kRange>
void ScanCodesWithStarts(const SliceColumns& s, const Code* codes, uint32_t lo,
                         uint32_t hi, int64_t dur_low, int64_t dur_high,
                         CodeAcc* acc, Stat* ts) {
  const uint32_t* durations = s.stored_durations();
  for (uint32_t i = lo; i < hi; ++i) {
    const uint32_t d = durations[i];
    const int64_t full =
        d == SliceColumns::kSaturated ? s.duration(i) : int64_t{d};
    if constexpr (kRange) {
      if (full < dur_low || full > dur_high) continue;
    }
    const Code code = codes[i];
    CodeAcc& a = acc[code];
    ++a.count;
    a.stored += d;
    a.extra += int128(full) - d;
    a.min = std::min(a.min, full);
    a.max = std::max(a.max, full);
    ts[code].Add(s.start(i));
  }
}

bool CompareInt(int64_t v, FastOp op, int64_t x) {
  switch (op) {
    case FastOp::kEq:
      return v == x;
    case FastOp::kNe:
      return v != x;
    case FastOp::kLt:
      return v < x;
    case FastOp::kLe:
      return v <= x;
    case FastOp::kGt:
      return v > x;
    case FastOp::kGe:
      return v >= x;
  }
  return false;
}

// BINARY collation: bytes, then length.
bool CompareText(std::string_view v, FastOp op, std::string_view x) {
  const int c = v.compare(x);
  switch (op) {
    case FastOp::kEq:
      return c == 0;
    case FastOp::kNe:
      return c != 0;
    case FastOp::kLt:
      return c < 0;
    case FastOp::kLe:
      return c <= 0;
    case FastOp::kGt:
      return c > 0;
    case FastOp::kGe:
      return c >= 0;
  }
  return false;
}

// What every slice of one track shares.
struct TrackFacts {
  TrackId id = 0;
  uint32_t track_class = 0;
  int64_t rank = 0;
  int64_t pid = 0;
};

class Executor {
 public:
  Executor(const TraceStore& store, const FastPlan& plan,
           const FastRunOptions& options)
      : store_(store), plan_(plan), options_(options) {}

  bool Run(uint64_t* visited,
           const std::function<bool(const std::vector<QueryValue>&)>& row);

 private:
  struct Chunk {
    size_t first = 0, last = 0;  // into tracks_
    Groups groups;
    uint64_t visited = 0;
    bool overflow = false;
  };
  void Prepare();
  void ClassifyTracks();
  bool TrackPasses(const TrackInfo& t, const ProcessInfo& p) const;
  void ScanChunk(Chunk* chunk) const;
  // ScanCodes over [lo, hi) of one run, into the chunk's groups. False
  // when the track's names are not coded (more than 65,536 of them).
  bool ScanRun(const TrackFacts& f, uint32_t depth, uint32_t lo, uint32_t hi,
               std::vector<CodeAcc>* scratch, std::vector<Stat>* ts_scratch,
               Chunk* chunk) const;
  void AddRunConstants(const TrackFacts& f, uint32_t depth, Acc* acc) const;

  const TraceStore& store_;
  const FastPlan& plan_;
  const FastRunOptions& options_;

  std::vector<TrackFacts> tracks_;
  std::vector<TrackId> class_track_;  // a track of each class
  bool group_name_ = false, group_depth_ = false;
  bool need_ts_ = false, need_dur_ = false;
  bool need_start_ = false;  // a bound or a per-slice test on ts
  int64_t low_ = kMin, high_ = kMax;
  bool empty_ = false;                    // the bounds exclude everything
  std::vector<FastPredicate> per_slice_;  // ts !=, dur
  std::vector<FastPredicate> per_depth_;
  std::vector<uint8_t> name_ok_;  // by string id; empty: every name
  // Runs need no test per slice but a dur range: ScanCodes takes them.
  bool kernel_ = false;
  bool kernel_min_max_ = false;
  // The dur conditions as one range (ScanCodes; the general loop tests
  // per_slice_).
  bool dur_range_ = false;
  int64_t dur_low_ = kMin, dur_high_ = kMax;
};

bool Executor::TrackPasses(const TrackInfo& t, const ProcessInfo& p) const {
  for (const FastPredicate& w : plan_.where) {
    switch (w.column) {
      case FastColumn::kHost:
        if (!CompareText(p.host_name, w.op, w.text)) return false;
        break;
      case FastColumn::kThread:
        if (!CompareText(t.name, w.op, w.text)) return false;
        break;
      case FastColumn::kRank:
        if (!CompareInt(RankOf(store_, p.id), w.op, w.number)) return false;
        break;
      case FastColumn::kPid:
        if (!CompareInt(p.pid, w.op, w.number)) return false;
        break;
      case FastColumn::kTrack:
        if (!CompareInt(t.id, w.op, w.number)) return false;
        break;
      default:
        break;
    }
  }
  return true;
}

void Executor::Prepare() {
  for (FastColumn g : plan_.group_by) {
    group_name_ |= g == FastColumn::kName;
    group_depth_ |= g == FastColumn::kDepth;
  }
  for (const FastOutput& o : plan_.outputs) {
    if (o.agg == FastAgg::kNone || o.agg == FastAgg::kCount) continue;
    need_ts_ |= o.column == FastColumn::kTs;
    need_dur_ |= o.column == FastColumn::kDur;
  }
  std::vector<FastPredicate> names;
  for (const FastPredicate& w : plan_.where) {
    if (w.column == FastColumn::kTs) {
      need_start_ = true;
      switch (w.op) {
        case FastOp::kEq:
          low_ = std::max(low_, w.number);
          high_ = std::min(high_, w.number);
          break;
        case FastOp::kGe:
          low_ = std::max(low_, w.number);
          break;
        case FastOp::kGt:
          if (w.number == kMax)
            empty_ = true;
          else
            low_ = std::max(low_, w.number + 1);
          break;
        case FastOp::kLe:
          high_ = std::min(high_, w.number);
          break;
        case FastOp::kLt:
          if (w.number == kMin)
            empty_ = true;
          else
            high_ = std::min(high_, w.number - 1);
          break;
        case FastOp::kNe:
          per_slice_.push_back(w);
          break;
      }
    } else if (w.column == FastColumn::kDur) {
      per_slice_.push_back(w);
    } else if (w.column == FastColumn::kDepth) {
      per_depth_.push_back(w);
    } else if (w.column == FastColumn::kName) {
      names.push_back(w);
    }
  }
  if (low_ > high_) empty_ = true;
  // Ranges of dur are one test per slice that ScanCodes makes; != and
  // tests of ts are left to the general loop.
  bool ranges_only = true;
  for (const FastPredicate& w : per_slice_) {
    if (w.column != FastColumn::kDur || w.op == FastOp::kNe) {
      ranges_only = false;
      continue;
    }
    dur_range_ = true;
    switch (w.op) {
      case FastOp::kEq:
        dur_low_ = std::max(dur_low_, w.number);
        dur_high_ = std::min(dur_high_, w.number);
        break;
      case FastOp::kGe:
        dur_low_ = std::max(dur_low_, w.number);
        break;
      case FastOp::kGt:
        if (w.number == kMax)
          dur_high_ = kMin, dur_low_ = kMax;
        else
          dur_low_ = std::max(dur_low_, w.number + 1);
        break;
      case FastOp::kLe:
        dur_high_ = std::min(dur_high_, w.number);
        break;
      case FastOp::kLt:
        if (w.number == kMin)
          dur_high_ = kMin, dur_low_ = kMax;
        else
          dur_high_ = std::min(dur_high_, w.number - 1);
        break;
      case FastOp::kNe:
        break;
    }
  }
  kernel_ = ranges_only;
  for (const FastOutput& o : plan_.outputs) {
    kernel_min_max_ |= o.column == FastColumn::kDur &&
                       (o.agg == FastAgg::kMin || o.agg == FastAgg::kMax);
  }
  if (!names.empty()) {
    name_ok_.assign(store_.string_count(), 1);
    for (size_t id = 0; id < name_ok_.size(); ++id) {
      const std::string_view n = store_.str(static_cast<StringId>(id));
      for (const FastPredicate& w : names) {
        if (!CompareText(n, w.op, w.text)) name_ok_[id] = 0;
      }
    }
  }
  ClassifyTracks();
}

// The tracks in the order the `slices` table lists them, each with the
// class of its grouped track and process columns.
void Executor::ClassifyTracks() {
  absl::flat_hash_map<std::string, uint32_t> classes;
  for (const ProcessInfo& p : store_.processes()) {
    for (TrackId id : p.tracks) {
      const TrackInfo& t = store_.tracks()[id];
      if (store_.data(id).slices.empty() || !TrackPasses(t, p)) continue;
      TrackFacts f;
      f.id = id;
      f.rank = RankOf(store_, p.id);
      f.pid = p.pid;
      std::string key;
      for (FastColumn g : plan_.group_by) {
        std::string_view part;
        std::string number;
        switch (g) {
          case FastColumn::kHost:
            part = p.host_name;
            break;
          case FastColumn::kThread:
            part = t.name;
            break;
          case FastColumn::kRank:
            number = std::to_string(f.rank);
            break;
          case FastColumn::kPid:
            number = std::to_string(f.pid);
            break;
          case FastColumn::kTrack:
            number = std::to_string(id);
            break;
          default:
            continue;
        }
        if (part.empty()) part = number;
        // Length-prefixed, so that no two tuples share a key.
        key += std::to_string(part.size());
        key += ':';
        key += part;
      }
      auto [it, fresh] =
          classes.try_emplace(key, static_cast<uint32_t>(class_track_.size()));
      if (fresh) class_track_.push_back(id);
      f.track_class = it->second;
      tracks_.push_back(f);
    }
  }
}

void Executor::ScanChunk(Chunk* chunk) const {
  // Slots of the current run by name (group_name_), else slot 0.
  std::vector<uint32_t> slot_of_name;
  std::vector<uint32_t> slot_names;
  std::vector<CodeAcc> codes;
  std::vector<Stat> starts;
  std::vector<Acc> slots(group_name_ ? 0 : 1);
  for (size_t k = chunk->first; k < chunk->last; ++k) {
    const TrackFacts& f = tracks_[k];
    const SliceColumns& s = store_.data(f.id).slices;
    for (uint32_t depth = 0; depth < s.depth_count(); ++depth) {
      bool depth_ok = true;
      for (const FastPredicate& w : per_depth_) {
        depth_ok &= CompareInt(depth, w.op, w.number);
      }
      if (!depth_ok) continue;
      uint32_t i = s.depth_begin(depth);
      const uint32_t end = s.depth_end(depth);
      if (low_ > kMin) i = s.FirstStartingAtOrAfter(i, end, low_);
      if (kernel_) {
        // Starts ascend within a depth: the bounds are one range.
        const uint32_t hi =
            high_ < kMax ? s.FirstStartingAtOrAfter(i, end, high_ + 1) : end;
        if (ScanRun(f, depth, i, hi, &codes, &starts, chunk)) {
          chunk->visited += hi - i;
          if (chunk->groups.size() > options_.max_groups) {
            chunk->overflow = true;
            return;
          }
          continue;
        }
      }
      if (group_name_ && slot_of_name.empty()) {
        slot_of_name.assign(store_.string_count(), UINT32_MAX);
      }
      const uint32_t from = i;
      for (; i < end; ++i) {
        int64_t start = 0;
        if (need_start_ || need_ts_) {
          start = s.start(i);
          if (start > high_) break;
        }
        const StringId name = s.name(i);
        if (!name_ok_.empty() && (name >= name_ok_.size() || !name_ok_[name]))
          continue;
        bool pass = true;
        for (const FastPredicate& w : per_slice_) {
          pass &=
              CompareInt(w.column == FastColumn::kTs ? start : s.duration(i),
                         w.op, w.number);
        }
        if (!pass) continue;
        // Without GROUP BY name there is one slot; with it, the slots are
        // made as names come.
        Acc* a = slots.data();
        if (group_name_) {
          // The store's names are ids of its string table; anything else
          // is left to SQLite rather than guessed.
          if (name >= slot_of_name.size()) [[unlikely]] {
            chunk->overflow = true;
            return;
          }
          uint32_t& slot = slot_of_name[name];
          if (slot == UINT32_MAX) {
            slot = static_cast<uint32_t>(slot_names.size());
            slot_names.push_back(name);
            if (slots.size() < slot_names.size()) slots.emplace_back();
          }
          a = &slots[slot];
        }
        ++a->count;
        if (need_dur_) a->stat[kStatDur].Add(s.duration(i));
        if (need_ts_) a->stat[kStatTs].Add(start);
      }
      chunk->visited += i - from;
      // The run's slots into the chunk's groups.
      const size_t used = group_name_ ? slot_names.size() : 1;
      for (size_t u = 0; u < used; ++u) {
        Acc& a = slots[u];
        if (a.count == 0 && group_name_) continue;
        AddRunConstants(f, depth, &a);
        GroupKey key{f.track_class, group_depth_ ? depth : 0,
                     group_name_ ? slot_names[u] : 0};
        if (a.count > 0) {
          Acc& g = chunk->groups[key];
          g.count += a.count;
          for (int c = 0; c < kStatCount; ++c) g.stat[c].Merge(a.stat[c]);
        }
        a = Acc();
        if (group_name_) slot_of_name[slot_names[u]] = UINT32_MAX;
      }
      slot_names.clear();
      if (chunk->groups.size() > options_.max_groups) {
        chunk->overflow = true;
        return;
      }
    }
  }
}

void Executor::AddRunConstants(const TrackFacts& f, uint32_t depth,
                               Acc* acc) const {
  acc->stat[kStatDepth].AddRepeated(depth, acc->count);
  acc->stat[kStatRank].AddRepeated(f.rank, acc->count);
  acc->stat[kStatPid].AddRepeated(f.pid, acc->count);
  acc->stat[kStatTrack].AddRepeated(f.id, acc->count);
}

bool Executor::ScanRun(const TrackFacts& f, uint32_t depth, uint32_t lo,
                       uint32_t hi, std::vector<CodeAcc>* scratch,
                       std::vector<Stat>* ts_scratch, Chunk* chunk) const {
  const SliceColumns& s = store_.data(f.id).slices;
  const NameColumn& names = s.names();
  const int bytes = names.bytes_per_name();
  if (bytes > 2) return false;
  const std::span<const uint32_t> table = names.table();
  // Blocks of kKernelBlock keep the stored sums within 64 bits.
  for (uint32_t from = lo; from < hi;) {
    const uint32_t to = hi - from > kKernelBlock ? from + kKernelBlock : hi;
    scratch->assign(table.size(), CodeAcc());
    CodeAcc* acc = scratch->data();
    // Kept apart: most statements aggregate no start, and the scratch is
    // cleared for every run.
    if (need_ts_) ts_scratch->assign(table.size(), Stat());
    Stat* ts = ts_scratch->data();
    auto scan_with = [&]<typename Code, bool kRange>(const Code* codes) {
      if (need_ts_) {
        ScanCodesWithStarts<Code, kRange>(s, codes, from, to, dur_low_,
                                          dur_high_, acc, ts);
      } else if (!need_dur_) {
        ScanCodes<Code, false, false, kRange>(s, codes, from, to, dur_low_,
                                              dur_high_, acc);
      } else if (kernel_min_max_) {
        ScanCodes<Code, true, true, kRange>(s, codes, from, to, dur_low_,
                                            dur_high_, acc);
      } else {
        ScanCodes<Code, true, false, kRange>(s, codes, from, to, dur_low_,
                                             dur_high_, acc);
      }
    };
    auto scan = [&]<typename Code>(const Code* codes) {
      if (dur_range_) {
        scan_with.template operator()<Code, true>(codes);
      } else {
        scan_with.template operator()<Code, false>(codes);
      }
    };
    if (bytes == 1) {
      scan(names.codes8());
    } else {
      scan(names.codes16());
    }
    from = to;
    for (size_t c = 0; c < table.size(); ++c) {
      const CodeAcc& a = acc[c];
      if (a.count == 0) continue;
      const StringId name = table[c];
      if (!name_ok_.empty() && (name >= name_ok_.size() || !name_ok_[name])) {
        continue;
      }
      Acc run;
      run.count = static_cast<int64_t>(a.count);
      Stat& dur = run.stat[kStatDur];
      dur.sum = int128(a.stored) + a.extra;
      dur.abs = uint128(dur.sum);
      dur.min = a.min;
      dur.max = a.max;
      if (need_ts_) run.stat[kStatTs] = ts[c];
      AddRunConstants(f, depth, &run);
      Acc& g = chunk->groups[GroupKey{f.track_class, group_depth_ ? depth : 0,
                                      group_name_ ? name : 0}];
      g.count += run.count;
      for (int k = 0; k < kStatCount; ++k) g.stat[k].Merge(run.stat[k]);
    }
  }
  return true;
}

bool Executor::Run(
    uint64_t* visited,
    const std::function<bool(const std::vector<QueryValue>&)>& row) {
  Prepare();
  *visited = 0;
  // Chunks of about equal slice counts, a few per thread so that uneven
  // tracks balance.
  const int threads = base::ThreadCount(options_.threads);
  uint64_t total = 0;
  for (const TrackFacts& f : tracks_) total += store_.data(f.id).slices.size();
  const uint64_t target =
      std::max<uint64_t>(1, total / (static_cast<uint64_t>(threads) * 4));
  std::vector<Chunk> chunks;
  if (!empty_) {
    uint64_t in_chunk = 0;
    for (size_t k = 0; k < tracks_.size(); ++k) {
      if (chunks.empty() || in_chunk >= target) {
        chunks.emplace_back();
        chunks.back().first = k;
        in_chunk = 0;
      }
      chunks.back().last = k + 1;
      in_chunk += store_.data(tracks_[k].id).slices.size();
    }
  }
  base::ParallelFor(threads, chunks.size(),
                    [&](size_t c) { ScanChunk(&chunks[c]); });
  Groups groups;
  for (Chunk& c : chunks) {
    *visited += c.visited;
    if (c.overflow) return false;
    for (const auto& [key, acc] : c.groups) {
      Acc& g = groups[key];
      g.count += acc.count;
      for (int s = 0; s < kStatCount; ++s) g.stat[s].Merge(acc.stat[s]);
    }
    c.groups = Groups();
    if (groups.size() > options_.max_groups) return false;
  }
  // Without GROUP BY, one row even over no slices.
  if (plan_.group_by.empty()) groups.try_emplace(GroupKey{});
  return EmitRows(store_, plan_, class_track_, std::move(groups), row);
}

}  // namespace

bool RunFastQuery(
    const TraceStore& store, const FastPlan& plan,
    const FastRunOptions& options, uint64_t* visited,
    const std::function<bool(const std::vector<QueryValue>&)>& row) {
  return Executor(store, plan, options).Run(visited, row);
}

}  // namespace podscope::viewer::query
