// session_query.h: one in-memory SQLite connection per query object with
// the session's tables registered as eponymous virtual tables; the derived
// tables (steps, collectives, compiles, processes, threads, flows) are
// built from the pod analyses the first time a statement reads them.
#include "podscope/viewer/session_query.h"

#include <sqlite3.h>

// GCC 12 reports the std::string alternative of a QueryValue copied out of
// an initializer list as maybe-uninitialized (a known false positive of
// its variant analysis at -O2).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cctype>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis_pod_util.h"
#include "podscope/viewer/pod_analysis.h"
#include "query_fast.h"
#include "query_tables.h"

namespace podscope::viewer {

using query::RowsTable;
using Rows = RowsTable::Rows;

struct SessionQuery::Impl {
  const TraceStore& store;
  sqlite3* db = nullptr;
  query::TableContext ctx;
  std::vector<std::unique_ptr<query::Table>> tables;
  // Statements the store's columns answered without SQLite's scan.
  uint64_t fast_path_runs = 0;
  // Shared by the derived tables, computed once.
  std::optional<StepBreakdown> steps;

  SessionQueryOptions options;

  Impl(const TraceStore& s, const SessionQueryOptions& o)
      : store(s), options(o) {}
  ~Impl() {
    if (db != nullptr) sqlite3_close(db);
  }
  const StepBreakdown& Steps() {
    if (!steps) steps = AnalyzeSteps(store);
    return *steps;
  }
  int64_t Rank(ProcessId p) const { return query::RankOf(store, p); }
  std::string Kind(trace_format::proto::TrackKind k) const {
    std::string name = trace_format::proto::TrackKind_Name(k);
    const std::string prefix = "TRACK_KIND_";
    if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
    for (char& c : name) c = static_cast<char>(std::tolower(c));
    return name;
  }
  int64_t SliceId(const EventRef& e) const {
    return static_cast<int64_t>(pod::SliceKey(e));
  }
  void AddTables();
  // Whether `slices` in a statement means the store's table: a table or
  // view of that name that an earlier statement created would hide it.
  bool SlicesIsTheStore();
};

bool SessionQuery::Impl::SlicesIsTheStore() {
  sqlite3_stmt* stmt = nullptr;
  static constexpr char kShadows[] =
      "SELECT 1 FROM sqlite_temp_schema WHERE name = 'slices' COLLATE NOCASE "
      "UNION ALL SELECT 1 FROM main.sqlite_schema WHERE name = 'slices' "
      "COLLATE NOCASE";
  if (sqlite3_prepare_v2(db, kShadows, -1, &stmt, nullptr) != SQLITE_OK) {
    return false;
  }
  const bool none = sqlite3_step(stmt) == SQLITE_DONE;
  sqlite3_finalize(stmt);
  return none;
}

void SessionQuery::Impl::AddTables() {
  tables.push_back(std::make_unique<query::SlicesTable>(store, &ctx));
  query::Register(db, "slices", tables.back().get());
  tables.push_back(std::make_unique<query::CountersTable>(store));
  query::Register(db, "counters", tables.back().get());
  auto add = [&](const char* name, std::vector<std::string> columns,
                 std::function<Rows()> build) {
    tables.push_back(
        std::make_unique<RowsTable>(std::move(columns), std::move(build)));
    query::Register(db, name, tables.back().get());
  };
  add("processes",
      {"process_id INTEGER", "host TEXT", "pid INTEGER", "rank INTEGER",
       "path TEXT"},
      [this] {
        Rows rows;
        for (const ProcessInfo& p : store.processes()) {
          rows.push_back(
              {int64_t{p.id}, p.host_name, p.pid, Rank(p.id), p.path});
        }
        return rows;
      });
  add("threads",
      {"track INTEGER", "process_id INTEGER", "host TEXT", "pid INTEGER",
       "rank INTEGER", "kind TEXT", "name TEXT", "tid INTEGER",
       "device_id INTEGER", "stream_id INTEGER"},
      [this] {
        Rows rows;
        for (const TrackInfo& t : store.tracks()) {
          const ProcessInfo& p = store.processes()[t.process];
          rows.push_back({int64_t{t.id}, int64_t{t.process}, p.host_name, p.pid,
                          Rank(t.process), Kind(t.kind), t.name, t.tid,
                          int64_t{t.device_id}, int64_t{t.stream_id}});
        }
        return rows;
      });
  add("flows",
      {"track INTEGER", "slice_id INTEGER", "flow_id INTEGER", "phase TEXT"},
      [this] {
        Rows rows;
        for (const TrackInfo& t : store.tracks()) {
          for (const trace_format::FlowLink& f : store.data(t.id).flows) {
            if (f.kind != trace_format::EventKind::kSlice) continue;
            const char* phase =
                f.phase == trace_format::FlowPhase::kBegin ? "begin"
                : f.phase == trace_format::FlowPhase::kEnd ? "end"
                                                           : "step";
            rows.push_back(
                {int64_t{t.id},
                 SliceId({t.id, trace_format::EventKind::kSlice, f.index}),
                 static_cast<int64_t>(f.flow_id), phase});
          }
        }
        return rows;
      });
  std::vector<std::string> step_columns = {"rank INTEGER", "step INTEGER",
                                           "ts INTEGER", "dur INTEGER"};
  for (int c = 0; c < kStepCategoryCount; ++c) {
    step_columns.push_back(
        std::string(StepCategoryName(static_cast<StepCategory>(c))) +
        "_ns INTEGER");
  }
  step_columns.push_back("slice_id INTEGER");
  add("steps", std::move(step_columns), [this] {
    const StepBreakdown& s = Steps();
    Rows rows;
    for (const StepRow& row : s.rows) {
      for (size_t r = 0; r < row.ranks.size() && r < s.ranks.size(); ++r) {
        const StepCell& c = row.ranks[r];
        if (!c.present) continue;
        std::vector<QueryValue> v = {int64_t{s.ranks[r].rank}, row.step,
                                     c.start_ns, c.duration_ns};
        for (int64_t ns : c.category_ns) v.push_back(ns);
        v.push_back(SliceId(c.event));
        rows.push_back(std::move(v));
      }
    }
    return rows;
  });
  add("collectives",
      {"key TEXT", "name TEXT", "rank INTEGER", "ts INTEGER", "dur INTEGER",
       "wait_ns INTEGER", "last INTEGER", "late_by_ns INTEGER", "step INTEGER",
       "slice_id INTEGER"},
      [this] {
        const StepBreakdown& s = Steps();
        const StragglerReport report = AnalyzeStragglers(store, s);
        Rows rows;
        for (const JoinedCollective& c : report.collectives) {
          const QueryValue step = c.step_row >= 0
                                      ? QueryValue(s.rows[c.step_row].step)
                                      : QueryValue();
          for (const CollectiveArrival& a : c.arrivals) {
            const int64_t rank =
                a.rank >= 0 && static_cast<size_t>(a.rank) < s.ranks.size()
                    ? int64_t{s.ranks[a.rank].rank}
                    : int64_t{a.rank};
            rows.push_back(
                {c.key, c.name, rank, a.start_ns, a.duration_ns,
                 a.wait_ns >= 0 ? QueryValue(a.wait_ns) : QueryValue(),
                 int64_t{a.rank == c.last_rank ? 1 : 0}, c.late_by_ns, step,
                 SliceId(a.event)});
          }
        }
        return rows;
      });
  add("compiles",
      {"rank INTEGER", "ts INTEGER", "dur INTEGER", "graph_hash TEXT",
       "cache_hit INTEGER", "signature TEXT", "step INTEGER", "late INTEGER",
       "slice_id INTEGER"},
      [this] {
        const StepBreakdown& s = Steps();
        const CompileReport report = AnalyzeCompiles(store, s);
        Rows rows;
        for (const CompileEvent& c : report.compiles) {
          const int64_t rank =
              c.rank >= 0 && static_cast<size_t>(c.rank) < s.ranks.size()
                  ? int64_t{s.ranks[c.rank].rank}
                  : int64_t{c.rank};
          rows.push_back(
              {rank, c.start_ns, c.duration_ns, c.graph_hash,
               c.cache_hit ? QueryValue(int64_t{*c.cache_hit ? 1 : 0})
                           : QueryValue(),
               c.signature, c.step >= 0 ? QueryValue(c.step) : QueryValue(),
               int64_t{c.late ? 1 : 0}, SliceId(c.event)});
        }
        return rows;
      });
}

SessionQuery::SessionQuery(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
SessionQuery::~SessionQuery() = default;

absl::StatusOr<std::unique_ptr<SessionQuery>> SessionQuery::Create(
    const TraceStore& store, const SessionQueryOptions& options) {
  auto impl = std::make_unique<Impl>(store, options);
  if (sqlite3_open_v2(":memory:", &impl->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    return absl::InternalError("query: cannot open an in-memory database");
  }
  // The statements are the user's own, on their own data; still, no
  // file is ever opened or attached on their behalf.
  sqlite3_limit(impl->db, SQLITE_LIMIT_ATTACHED, 0);
  impl->AddTables();
  return std::unique_ptr<SessionQuery>(new SessionQuery(std::move(impl)));
}

uint64_t SessionQuery::slices_visited() const {
  return impl_->ctx.slices_visited;
}

uint64_t SessionQuery::fast_path_runs() const { return impl_->fast_path_runs; }

absl::Status SessionQuery::Run(
    std::string_view sql, std::vector<std::string>* columns,
    const std::function<bool(const std::vector<QueryValue>&)>& row) {
  impl_->ctx.slices_visited = 0;
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  if (sql.size() > (1 << 20)) {
    return absl::InvalidArgumentError("SQL: a statement of over 1 MiB");
  }
  if (sqlite3_prepare_v2(impl_->db, sql.data(), static_cast<int>(sql.size()),
                         &stmt, &tail) != SQLITE_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat("SQL: ", sqlite3_errmsg(impl_->db)));
  }
  if (stmt == nullptr) {
    return absl::InvalidArgumentError("SQL: the statement is empty");
  }
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owned(stmt,
                                                              sqlite3_finalize);
  for (const char* t = tail; t != nullptr && t < sql.data() + sql.size(); ++t) {
    if (*t == ';' || std::isspace(static_cast<unsigned char>(*t))) continue;
    return absl::InvalidArgumentError(
        "SQL: one statement at a time (text follows the first)");
  }
  const int n = sqlite3_column_count(stmt);
  columns->clear();
  for (int i = 0; i < n; ++i) {
    const char* name = sqlite3_column_name(stmt, i);
    columns->push_back(name ? name : "");
  }
  // The common aggregate shape is answered from the store's columns with
  // the rows SQLite would give; SQLite still prepared it, for its checks
  // and its column names.
  std::optional<query::FastPlan> plan;
  if (impl_->options.native_aggregates) plan = query::ParseFastQuery(sql);
  if (plan && plan->visible == static_cast<size_t>(n) &&
      impl_->SlicesIsTheStore()) {
    uint64_t visited = 0;
    query::FastRunOptions fast;
    fast.threads = impl_->options.threads;
    fast.max_groups = impl_->options.native_max_groups;
    if (query::RunFastQuery(impl_->store, *plan, fast, &visited, row)) {
      impl_->ctx.slices_visited = visited;
      impl_->fast_path_runs++;
      return absl::OkStatus();
    }
  }
  std::vector<QueryValue> values(static_cast<size_t>(n));
  while (true) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      return absl::InvalidArgumentError(
          absl::StrCat("SQL: ", sqlite3_errmsg(impl_->db)));
    }
    for (int i = 0; i < n; ++i) {
      switch (sqlite3_column_type(stmt, i)) {
        case SQLITE_INTEGER:
          values[i] = static_cast<int64_t>(sqlite3_column_int64(stmt, i));
          break;
        case SQLITE_FLOAT:
          values[i] = sqlite3_column_double(stmt, i);
          break;
        case SQLITE_NULL:
          values[i] = std::monostate();
          break;
        default: {
          const auto* t = sqlite3_column_text(stmt, i);
          values[i] =
              std::string(reinterpret_cast<const char*>(t),
                          static_cast<size_t>(sqlite3_column_bytes(stmt, i)));
        }
      }
    }
    if (!row(values)) break;
  }
  return absl::OkStatus();
}

}  // namespace podscope::viewer
