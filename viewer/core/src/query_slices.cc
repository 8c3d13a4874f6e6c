// The `slices` and `counters` tables of session_query.h: cursors over the
// store's columns that take equality on rank, host and name and ranges on
// ts from SQLite and answer them from the store (the processes' track
// lists, the string table, and binary searches over starts, which ascend
// within each depth of a track). Text columns point into the store, which
// outlives the query (SQLITE_STATIC: no copy per row).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analysis_pod_util.h"
#include "podscope/base/json.h"
#include "podscope/base/strings.h"
#include "query_tables.h"

namespace podscope::viewer::query {
namespace {

constexpr int kRank = 1, kHost = 2, kName = 4, kLow = 8, kHigh = 16;

std::string_view Text(sqlite3_value* v) {
  const unsigned char* t = sqlite3_value_text(v);
  return t ? std::string_view(reinterpret_cast<const char*>(t),
                              static_cast<size_t>(sqlite3_value_bytes(v)))
           : std::string_view();
}

// The plan: which of rank, host, name (slices only), ts >= / > (low) and
// ts <= / < (high) are pushed, one constraint each, their arguments in
// that order. SQLite checks every constraint again (omit stays 0), so the
// pushed bounds only need to contain the answer.
int Plan(sqlite3_index_info* info, int rank_col, int host_col, int name_col,
         int ts_col, double rows) {
  int plan = 0;
  int slot[5] = {-1, -1, -1, -1, -1};
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable) continue;
    auto take = [&](int bit, int k) {
      if (plan & bit) return;
      plan |= bit;
      slot[k] = i;
    };
    if (c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      if (c.iColumn == rank_col) take(kRank, 0);
      if (c.iColumn == host_col) take(kHost, 1);
      if (name_col >= 0 && c.iColumn == name_col) take(kName, 2);
      if (c.iColumn == ts_col) {
        take(kLow, 3);
        take(kHigh, 4);
      }
    } else if (c.iColumn == ts_col) {
      if (c.op == SQLITE_INDEX_CONSTRAINT_GT ||
          c.op == SQLITE_INDEX_CONSTRAINT_GE) {
        take(kLow, 3);
      } else if (c.op == SQLITE_INDEX_CONSTRAINT_LT ||
                 c.op == SQLITE_INDEX_CONSTRAINT_LE) {
        take(kHigh, 4);
      }
    }
  }
  int arg = 1;
  for (int k = 0; k < 5; ++k) {
    if (slot[k] < 0) continue;
    // An equality on ts fills both bounds from one argument.
    if (k == 4 && slot[4] == slot[3]) continue;
    info->aConstraintUsage[slot[k]].argvIndex = arg++;
  }
  double cost = rows;
  if (plan & (kRank | kHost)) cost /= 8;
  if (plan & kName) cost /= 32;
  if (plan & (kLow | kHigh)) cost /= 16;
  info->estimatedCost = cost + 10;
  info->estimatedRows = static_cast<sqlite3_int64>(cost) + 1;
  info->idxNum = plan;
  return SQLITE_OK;
}

struct Bounds {
  std::optional<int64_t> rank;
  std::optional<std::string> host;
  std::optional<std::string> name;
  int64_t low = std::numeric_limits<int64_t>::min();
  int64_t high = std::numeric_limits<int64_t>::max();
};

// Numbers beyond int64 clamp; REALs round outwards.
int64_t Bound(sqlite3_value* v, bool low) {
  if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER) {
    return sqlite3_value_int64(v);
  }
  const double d = sqlite3_value_double(v);
  if (std::isnan(d))
    return low ? std::numeric_limits<int64_t>::max()
               : std::numeric_limits<int64_t>::min();
  const double r = low ? std::floor(d) : std::ceil(d);
  if (r <= -9.2e18) return std::numeric_limits<int64_t>::min();
  if (r >= 9.2e18) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(r);
}

Bounds ReadBounds(int plan, int argc, sqlite3_value** argv) {
  Bounds b;
  int a = 0;
  auto next = [&]() -> sqlite3_value* {
    return a < argc ? argv[a++] : nullptr;
  };
  if (plan & kRank) {
    if (sqlite3_value* v = next()) {
      b.rank = sqlite3_value_numeric_type(v) == SQLITE_INTEGER
                   ? sqlite3_value_int64(v)
                   : std::numeric_limits<int64_t>::min();
    }
  }
  if (plan & kHost) {
    if (sqlite3_value* v = next()) b.host = std::string(Text(v));
  }
  if (plan & kName) {
    if (sqlite3_value* v = next()) b.name = std::string(Text(v));
  }
  sqlite3_value* low = (plan & kLow) ? next() : nullptr;
  sqlite3_value* high = (plan & kHigh) ? next() : nullptr;
  if (low) b.low = Bound(low, true);
  if (high) b.high = Bound(high, false);
  // An equality gave one argument for both bounds.
  if ((plan & kLow) && (plan & kHigh) && low && !high) {
    b.high = Bound(low, false);
  }
  return b;
}

// The tracks of the processes the bounds allow, in store order.
std::vector<TrackId> TracksFor(const TraceStore& store, const Bounds& b,
                               bool counters) {
  std::vector<TrackId> out;
  for (const ProcessInfo& p : store.processes()) {
    if (b.rank && RankOf(store, p.id) != *b.rank) continue;
    if (b.host && p.host_name != *b.host) continue;
    for (TrackId t : p.tracks) {
      const TrackData& d = store.data(t);
      if (counters ? d.counters.size() > 0 : !d.slices.empty()) {
        out.push_back(t);
      }
    }
  }
  return out;
}

// The columns every row of a process has: host, pid and rank.
enum class ProcessColumn { kHost, kPid, kRank };
void ResultProcess(sqlite3_context* c, const TraceStore& store, ProcessId p,
                   ProcessColumn column) {
  const ProcessInfo& info = store.processes()[p];
  switch (column) {
    case ProcessColumn::kHost:
      sqlite3_result_text(c, info.host_name.data(),
                          static_cast<int>(info.host_name.size()),
                          SQLITE_STATIC);
      return;
    case ProcessColumn::kPid:
      sqlite3_result_int64(c, info.pid);
      return;
    case ProcessColumn::kRank:
      sqlite3_result_int64(c, RankOf(store, p));
      return;
  }
}

class SliceCursor : public Cursor {
 public:
  SliceCursor(const TraceStore& store, TableContext* ctx)
      : store_(store), ctx_(ctx) {}

  void Filter(int plan, int argc, sqlite3_value** argv) override {
    const Bounds b = ReadBounds(plan, argc, argv);
    low_ = b.low;
    high_ = b.high;
    name_.reset();
    tracks_.clear();
    done_ = false;
    if (b.name) {
      const auto id = store_.FindString(*b.name);
      if (!id) {
        done_ = true;
        return;
      }
      name_ = *id;
    }
    if (low_ > high_) {
      done_ = true;
      return;
    }
    tracks_ = TracksFor(store_, b, /*counters=*/false);
    track_ = 0;
    depth_ = 0;
    StartDepth();
    Settle();
  }
  void Next() override {
    ++i_;
    Settle();
  }
  bool Eof() const override { return done_; }
  int64_t Rowid() const override {
    return static_cast<int64_t>(pod::SliceKey(tracks_[track_], i_));
  }
  void Column(sqlite3_context* c, int column) override;

 private:
  const SliceColumns& S() const { return store_.data(tracks_[track_]).slices; }
  // Sets [i_, end_) to the slices of the current depth starting at or
  // after low_.
  void StartDepth() {
    if (track_ >= tracks_.size()) return;
    const SliceColumns& s = S();
    if (depth_ >= s.depth_count()) return;
    uint32_t lo = s.depth_begin(depth_), hi = s.depth_end(depth_);
    end_ = hi;
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (s.start(mid) < low_) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    i_ = lo;
  }
  // Moves to the first row at or after i_ that the bounds allow.
  void Settle() {
    while (track_ < tracks_.size()) {
      const SliceColumns& s = S();
      while (depth_ < s.depth_count()) {
        for (; i_ < end_; ++i_) {
          ++ctx_->slices_visited;
          if (s.start(i_) > high_) break;
          if (!name_ || s.name(i_) == *name_) return;
        }
        ++depth_;
        StartDepth();
      }
      ++track_;
      depth_ = 0;
      StartDepth();
    }
    done_ = true;
  }

  const TraceStore& store_;
  TableContext* ctx_;
  std::vector<TrackId> tracks_;
  size_t track_ = 0;
  uint32_t depth_ = 0, i_ = 0, end_ = 0;
  int64_t low_ = 0, high_ = 0;
  std::optional<StringId> name_;
  bool done_ = true;
};

void SliceCursor::Column(sqlite3_context* c, int column) {
  const TrackId track = tracks_[track_];
  const TrackInfo& info = store_.tracks()[track];
  const SliceColumns& s = S();
  const EventRef ref{track, trace_format::EventKind::kSlice, i_};
  switch (column) {
    case 0:
      sqlite3_result_int64(c, Rowid());
      return;
    case 1:
    case 2:
    case 3:
      ResultProcess(c, store_, info.process,
                    static_cast<ProcessColumn>(column - 1));
      return;
    case 4:
      sqlite3_result_int64(c, track);
      return;
    case 5:
      sqlite3_result_text(c, info.name.data(),
                          static_cast<int>(info.name.size()), SQLITE_TRANSIENT);
      return;
    case 6: {
      const std::string_view n = store_.str(s.name(i_));
      sqlite3_result_text(c, n.data(), static_cast<int>(n.size()),
                          SQLITE_STATIC);
      return;
    }
    case 7: {
      const char* cat = ctx_->Category(store_, ref, s.name(i_));
      sqlite3_result_text(c, cat, -1, SQLITE_STATIC);
      return;
    }
    case 8:
      sqlite3_result_int64(c, s.start(i_));
      return;
    case 9:
      sqlite3_result_int64(c, s.duration(i_));
      return;
    case 10:
      sqlite3_result_int64(c, depth_);
      return;
    case 11: {
      // The enclosing slice one depth up (none on relaid tracks, whose
      // depths are lanes).
      if (depth_ == 0 || s.relaid()) break;
      uint32_t lo = s.depth_begin(depth_ - 1), hi = s.depth_end(depth_ - 1);
      const int64_t start = s.start(i_);
      while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (s.start(mid) <= start) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo == s.depth_begin(depth_ - 1)) break;
      const uint32_t parent = lo - 1;
      if (s.end(parent) < s.end(i_)) break;
      sqlite3_result_int64(c,
                           static_cast<int64_t>(pod::SliceKey(track, parent)));
      return;
    }
    case 12: {
      const trace_format::EventArgs* args = store_.FindArgs(ref);
      if (args == nullptr || args->args.empty()) break;
      const std::string json = ArgsJson(store_, *args);
      sqlite3_result_text(c, json.data(), static_cast<int>(json.size()),
                          SQLITE_TRANSIENT);
      return;
    }
    default:
      break;
  }
  sqlite3_result_null(c);
}

class CounterCursor : public Cursor {
 public:
  explicit CounterCursor(const TraceStore& store) : store_(store) {}
  void Filter(int plan, int argc, sqlite3_value** argv) override {
    const Bounds b = ReadBounds(plan, argc, argv);
    low_ = b.low;
    high_ = b.high;
    tracks_ = TracksFor(store_, b, /*counters=*/true);
    track_ = 0;
    Start();
  }
  void Next() override {
    ++i_;
    Settle();
  }
  bool Eof() const override { return track_ >= tracks_.size(); }
  int64_t Rowid() const override {
    return static_cast<int64_t>(pod::SliceKey(tracks_[track_], i_));
  }
  void Column(sqlite3_context* c, int column) override {
    const TrackId track = tracks_[track_];
    const TrackInfo& info = store_.tracks()[track];
    const CounterColumns& k = store_.data(track).counters;
    switch (column) {
      case 0:
        sqlite3_result_int64(c, track);
        return;
      case 1:
      case 2:
      case 3:
        ResultProcess(c, store_, info.process,
                      static_cast<ProcessColumn>(column - 1));
        return;
      case 4:
        sqlite3_result_text(c, info.name.data(),
                            static_cast<int>(info.name.size()),
                            SQLITE_TRANSIENT);
        return;
      case 5:
        sqlite3_result_int64(c, k.ts[i_]);
        return;
      case 6:
        sqlite3_result_double(c, k.values[i_]);
        return;
      default:
        sqlite3_result_null(c);
    }
  }

 private:
  void Start() {
    if (track_ >= tracks_.size()) return;
    const CounterColumns& k = store_.data(tracks_[track_]).counters;
    i_ = static_cast<uint32_t>(
        std::lower_bound(k.ts.begin(), k.ts.end(), low_) - k.ts.begin());
    Settle();
  }
  void Settle() {
    while (track_ < tracks_.size()) {
      const CounterColumns& k = store_.data(tracks_[track_]).counters;
      if (i_ < k.size() && k.ts[i_] <= high_) return;
      ++track_;
      if (track_ >= tracks_.size()) return;
      const CounterColumns& n = store_.data(tracks_[track_]).counters;
      i_ = static_cast<uint32_t>(
          std::lower_bound(n.ts.begin(), n.ts.end(), low_) - n.ts.begin());
    }
  }

  const TraceStore& store_;
  std::vector<TrackId> tracks_;
  size_t track_ = 0;
  uint32_t i_ = 0;
  int64_t low_ = 0, high_ = 0;
};

}  // namespace

std::string SlicesTable::Schema() const {
  return "CREATE TABLE x(id INTEGER, host TEXT, pid INTEGER, rank INTEGER, "
         "track INTEGER, thread TEXT, name TEXT, category TEXT, ts INTEGER, "
         "dur INTEGER, depth INTEGER, parent_id INTEGER, args TEXT)";
}

int SlicesTable::BestIndex(sqlite3_index_info* info) {
  const int rc =
      Plan(info, 3, 1, 6, 8, static_cast<double>(store_.event_count()));
  if (rc == SQLITE_OK && ListedInOrder(info)) info->orderByConsumed = 1;
  return rc;
}

// Whether the cursor's own order (tracks in process order, then each
// track depth by depth, which is by index) already gives the rows ordered
// ascending by the ORDER BY or GROUP BY terms SQLite offers. Then SQLite
// may skip its sorter: its sort is stable, so rows it would have found
// equal keep this order anyway, and the result is the same. Only the
// columns constant over a track qualify, and `id` (track, then index),
// after which nothing can tie.
bool SlicesTable::ListedInOrder(const sqlite3_index_info* info) const {
  constexpr int kId = 0, kHost = 1, kPid = 2, kRank = 3, kTrack = 4,
                kThread = 5;
  if (info->nOrderBy <= 0) return false;
  int terms = 0;
  for (; terms < info->nOrderBy; ++terms) {
    const auto& o = info->aOrderBy[terms];
    if (o.desc) return false;
    if (o.iColumn == kId) {
      ++terms;
      break;
    }
    if (o.iColumn < kHost || o.iColumn > kThread) return false;
  }
  // The terms' values of each track, compared along the listing.
  auto compare = [&](TrackId a, TrackId b) {
    const TrackInfo& ta = store_.tracks()[a];
    const TrackInfo& tb = store_.tracks()[b];
    const ProcessInfo& pa = store_.processes()[ta.process];
    const ProcessInfo& pb = store_.processes()[tb.process];
    for (int k = 0; k < terms; ++k) {
      int c = 0;
      switch (info->aOrderBy[k].iColumn) {
        case kHost:
          c = pa.host_name.compare(pb.host_name);
          break;
        case kPid:
          c = pa.pid < pb.pid ? -1 : pa.pid > pb.pid ? 1 : 0;
          break;
        case kRank: {
          const int64_t ra = RankOf(store_, pa.id), rb = RankOf(store_, pb.id);
          c = ra < rb ? -1 : ra > rb ? 1 : 0;
          break;
        }
        case kThread:
          c = ta.name.compare(tb.name);
          break;
        case kTrack:
        default:  // and id's high half
          c = a < b ? -1 : a > b ? 1 : 0;
      }
      if (c != 0) return c;
    }
    return 0;
  };
  std::optional<TrackId> previous;
  for (const ProcessInfo& p : store_.processes()) {
    for (TrackId t : p.tracks) {
      if (store_.data(t).slices.empty()) continue;
      if (previous && compare(*previous, t) > 0) return false;
      previous = t;
    }
  }
  return true;
}

std::unique_ptr<Cursor> SlicesTable::Open() {
  return std::make_unique<SliceCursor>(store_, ctx_);
}

std::string CountersTable::Schema() const {
  return "CREATE TABLE x(track INTEGER, host TEXT, pid INTEGER, rank "
         "INTEGER, name TEXT, ts INTEGER, value REAL)";
}

int CountersTable::BestIndex(sqlite3_index_info* info) {
  return Plan(info, 3, 1, -1, 5, static_cast<double>(store_.event_count()));
}

std::unique_ptr<Cursor> CountersTable::Open() {
  return std::make_unique<CounterCursor>(store_);
}

TableContext::TableContext() = default;
TableContext::~TableContext() = default;

const char* TableContext::Category(const TraceStore& store, const EventRef& e,
                                   StringId name) {
  const TrackInfo& info = store.tracks()[e.track];
  if (!keys) {
    keys = std::make_unique<pod::Keys>(store);
    collective = std::make_unique<pod::CollectiveTest>(store, *keys);
  }
  if ((*collective)(e, name)) return "collective";
  if (pod::IsDevice(info)) return "device";
  if (base::ContainsIgnoreCase(info.name, "loader") ||
      base::ContainsIgnoreCase(store.str(name), "loader")) {
    return "data_loading";
  }
  return "host";
}

int64_t RankOf(const TraceStore& store, ProcessId p) {
  const ProcessInfo& info = store.processes()[p];
  return info.process_index >= 0 ? info.process_index : static_cast<int64_t>(p);
}

std::string ArgsJson(const TraceStore& store,
                     const trace_format::EventArgs& args) {
  std::string out;
  base::JsonWriter j(&out, base::JsonLayout::kCompact);
  j.BeginObject();
  for (const trace_format::Arg& a : args.args) {
    j.Key(store.str(a.key));
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            j.Int(v);
          } else if constexpr (std::is_same_v<T, double>) {
            j.Double(v);
          } else {
            j.String(store.str(v.id));
          }
        },
        a.value);
  }
  j.EndObject();
  return out;
}

}  // namespace podscope::viewer::query
