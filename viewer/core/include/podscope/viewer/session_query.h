// SQL over a session (`podscope query`): SQLite virtual tables backed by
// the store's columns, not a copy into SQLite tables. docs/analysis.md
// lists the tables and their columns:
//   slices       every slice: id, host, pid, rank, track, thread, name,
//                category, ts, dur, depth, parent_id, args (JSON)
//   counters     track, host, pid, rank, name, ts, value
//   flows        track, slice_id, flow_id, phase
//   steps        the step table: rank, step, ts, dur and time per category
//   collectives  each rank's arrival at each collective joined across
//                ranks: key, name, rank, ts, dur, wait_ns, last, late_by_ns,
//                step
//   compiles     rank, ts, dur, graph_hash, cache_hit, signature, step,
//                late, slice_id
//   processes    process_id, host, pid, rank, path
//   threads      track, process_id, host, pid, rank, kind, name, tid,
//                device_id, stream_id
// Times are ns on the store's (aligned) clock. On `slices` and `counters`,
// equality on rank, host and (slices) name and ranges on ts are answered
// from the store's indexes instead of a scan.
#ifndef PODSCOPE_VIEWER_SESSION_QUERY_H_
#define PODSCOPE_VIEWER_SESSION_QUERY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

using QueryValue = std::variant<std::monostate, int64_t, double, std::string>;

struct SessionQueryOptions {
  // Answer the common aggregate shape over `slices` from the store's
  // columns (docs/analysis.md lists it); false sends every statement
  // through SQLite's row-by-row scan, the reference the fast path is
  // tested against.
  bool native_aggregates = true;
  // Threads of the native path; 0: one per hardware thread.
  int threads = 0;
  // A statement of more groups than this goes to SQLite (each group
  // holds a few hundred bytes of sums while the native path runs).
  size_t native_max_groups = size_t{1} << 18;
};

class SessionQuery {
 public:
  // `store` must outlive the query.
  static absl::StatusOr<std::unique_ptr<SessionQuery>> Create(
      const TraceStore& store, const SessionQueryOptions& options = {});
  ~SessionQuery();

  // Runs one statement; `row` is called per result row (return false to
  // stop). `columns` receives the result's column names. An error names
  // what SQLite found wrong with the statement.
  absl::Status Run(
      std::string_view sql, std::vector<std::string>* columns,
      const std::function<bool(const std::vector<QueryValue>&)>& row);

  // How many rows the last Run's scans of `slices` visited (the pushed
  // constraints keep this below the table's size).
  uint64_t slices_visited() const;
  // How many statements were answered from the store's columns rather
  // than by SQLite's row-by-row scan (docs/analysis.md says which shapes
  // are): the same rows, sooner.
  uint64_t fast_path_runs() const;

  struct Impl;

 private:
  explicit SessionQuery(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_SESSION_QUERY_H_
