// The SQLite virtual-table glue of session_query.h: a table is a C++
// object that states its schema, plans a scan from the constraints SQLite
// offers (BestIndex) and opens cursors; Register() makes it an eponymous
// virtual table of a connection (`SELECT ... FROM name` with no CREATE).
#ifndef PODSCOPE_VIEWER_CORE_SRC_QUERY_VTAB_H_
#define PODSCOPE_VIEWER_CORE_SRC_QUERY_VTAB_H_

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "podscope/viewer/session_query.h"

namespace podscope::viewer::query {

class Cursor {
 public:
  virtual ~Cursor() = default;
  // Starts a scan with the plan BestIndex chose and its arguments.
  virtual void Filter(int plan, int argc, sqlite3_value** argv) = 0;
  virtual void Next() = 0;
  virtual bool Eof() const = 0;
  virtual void Column(sqlite3_context* ctx, int column) = 0;
  virtual int64_t Rowid() const = 0;
};

class Table {
 public:
  virtual ~Table() = default;
  // "CREATE TABLE x(a, b, ...)" as sqlite3_declare_vtab takes it.
  virtual std::string Schema() const = 0;
  // Fills the usage of the constraints it takes and returns SQLITE_OK.
  virtual int BestIndex(sqlite3_index_info* info) = 0;
  virtual std::unique_ptr<Cursor> Open() = 0;
};

// Registers `table` (owned by the caller, alive as long as the
// connection) as the eponymous virtual table `name`.
int Register(sqlite3* db, const char* name, Table* table);

// A table held as rows: the small derived tables (steps, collectives,
// compiles, processes, threads, flows), built by `build` when a statement
// first reads the table. Scanned whole; SQLite filters.
class RowsTable : public Table {
 public:
  using Rows = std::vector<std::vector<QueryValue>>;
  RowsTable(std::vector<std::string> columns, std::function<Rows()> build)
      : columns_(std::move(columns)), build_(std::move(build)) {}
  std::string Schema() const override;
  int BestIndex(sqlite3_index_info* info) override;
  std::unique_ptr<Cursor> Open() override;

 private:
  const Rows& rows();
  std::vector<std::string> columns_;
  std::function<Rows()> build_;
  std::optional<Rows> rows_;
};

void ResultValue(sqlite3_context* ctx, const QueryValue& v);

}  // namespace podscope::viewer::query

#endif  // PODSCOPE_VIEWER_CORE_SRC_QUERY_VTAB_H_
