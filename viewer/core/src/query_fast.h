// The native path of session_query.h for the common analytic shape over
// `slices`: one table, a WHERE of comparisons on columns joined by AND, a
// GROUP BY over columns, the aggregates count/sum/total/avg/min/max, ORDER
// BY and LIMIT. It is answered column by column from the store, in
// parallel over tracks, with the rows SQLite would give (values, types,
// order). Anything the strict parser does not understand exactly, and any
// result it cannot reproduce exactly (a sum past what a double or an
// int64 holds in every summation order), goes to SQLite unchanged.
#ifndef PODSCOPE_VIEWER_CORE_SRC_QUERY_FAST_H_
#define PODSCOPE_VIEWER_CORE_SRC_QUERY_FAST_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "podscope/viewer/session_query.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::query {

// The columns of `slices` the native path reads.
enum class FastColumn {
  kName,
  kHost,
  kThread,
  kRank,
  kPid,
  kTrack,
  kTs,
  kDur,
  kDepth
};
enum class FastAgg { kNone, kCount, kSum, kTotal, kAvg, kMin, kMax };
enum class FastOp { kEq, kNe, kLt, kLe, kGt, kGe };

struct FastOutput {
  FastAgg agg = FastAgg::kNone;  // kNone: a GROUP BY column's value
  FastColumn column = FastColumn::kName;
  bool star = false;  // count(*)
  friend bool operator==(const FastOutput&, const FastOutput&) = default;
};

struct FastPredicate {
  FastColumn column = FastColumn::kName;
  FastOp op = FastOp::kEq;
  int64_t number = 0;  // integer columns
  std::string text;    // text columns
};

struct FastOrder {
  size_t output = 0;  // into FastPlan::outputs
  bool desc = false;
};

struct FastPlan {
  // The SELECT list, then the values only ORDER BY reads.
  std::vector<FastOutput> outputs;
  size_t visible = 0;
  std::vector<FastPredicate> where;
  std::vector<FastColumn> group_by;
  std::vector<FastOrder> order_by;
  std::optional<int64_t> limit;
  int64_t offset = 0;
};

// The plan of `sql` when it has the shape above exactly; nullopt for
// anything else (SQLite answers it). Linear in the statement's length.
std::optional<FastPlan> ParseFastQuery(std::string_view sql);

struct FastRunOptions {
  int threads = 0;  // 0: one per hardware thread
  // More groups than this go to SQLite (SessionQueryOptions).
  size_t max_groups = size_t{1} << 18;
};

// Runs `plan` over the store. False (and no row delivered) when the
// result cannot be reproduced exactly; SQLite must answer instead.
// `visited` receives the slices the scan looked at.
bool RunFastQuery(
    const TraceStore& store, const FastPlan& plan,
    const FastRunOptions& options, uint64_t* visited,
    const std::function<bool(const std::vector<QueryValue>&)>& row);

}  // namespace podscope::viewer::query

#endif  // PODSCOPE_VIEWER_CORE_SRC_QUERY_FAST_H_
