// The tables of session_query.h (query_slices.cc: the store-backed
// `slices` and `counters`; session_query.cc: the derived ones).
#ifndef PODSCOPE_VIEWER_CORE_SRC_QUERY_TABLES_H_
#define PODSCOPE_VIEWER_CORE_SRC_QUERY_TABLES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "podscope/viewer/trace_store.h"
#include "query_vtab.h"

namespace podscope::viewer {
namespace pod {
struct Keys;
class CollectiveTest;
}  // namespace pod

namespace query {

// State the tables of one query share.
struct TableContext {
  TableContext();
  ~TableContext();
  uint64_t slices_visited = 0;
  // "collective", "device", "data_loading" or "host".
  const char* Category(const TraceStore& store, const EventRef& e,
                       StringId name);
  std::unique_ptr<pod::Keys> keys;
  std::unique_ptr<pod::CollectiveTest> collective;
};

// process_index when the file knows it, else the process's position.
int64_t RankOf(const TraceStore& store, ProcessId p);
// An event's arguments as one compact JSON object.
std::string ArgsJson(const TraceStore& store,
                     const trace_format::EventArgs& args);

class SlicesTable : public Table {
 public:
  SlicesTable(const TraceStore& store, TableContext* ctx)
      : store_(store), ctx_(ctx) {}
  std::string Schema() const override;
  int BestIndex(sqlite3_index_info* info) override;
  std::unique_ptr<Cursor> Open() override;

 private:
  bool ListedInOrder(const sqlite3_index_info* info) const;
  const TraceStore& store_;
  TableContext* ctx_;
};

class CountersTable : public Table {
 public:
  explicit CountersTable(const TraceStore& store) : store_(store) {}
  std::string Schema() const override;
  int BestIndex(sqlite3_index_info* info) override;
  std::unique_ptr<Cursor> Open() override;

 private:
  const TraceStore& store_;
};

}  // namespace query
}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_CORE_SRC_QUERY_TABLES_H_
