#include "query_vtab.h"

#include <cstring>
#include <variant>

namespace podscope::viewer::query {
namespace {

struct VTab {
  sqlite3_vtab base;  // first: SQLite sees a sqlite3_vtab*
  Table* table;
};

struct VCursor {
  sqlite3_vtab_cursor base;  // first
  std::unique_ptr<Cursor> cursor;
};

int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out,
            char**) {
  auto* table = static_cast<Table*>(aux);
  if (int rc = sqlite3_declare_vtab(db, table->Schema().c_str());
      rc != SQLITE_OK) {
    return rc;
  }
  auto* v = new VTab();
  std::memset(&v->base, 0, sizeof v->base);
  v->table = table;
  *out = &v->base;
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* vtab) {
  delete reinterpret_cast<VTab*>(vtab);
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  return reinterpret_cast<VTab*>(vtab)->table->BestIndex(info);
}

int OpenCursor(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
  auto* c = new VCursor();
  std::memset(&c->base, 0, sizeof c->base);
  c->cursor = reinterpret_cast<VTab*>(vtab)->table->Open();
  *out = &c->base;
  return SQLITE_OK;
}

int CloseCursor(sqlite3_vtab_cursor* cur) {
  delete reinterpret_cast<VCursor*>(cur);
  return SQLITE_OK;
}

Cursor& Of(sqlite3_vtab_cursor* cur) {
  return *reinterpret_cast<VCursor*>(cur)->cursor;
}

int Filter(sqlite3_vtab_cursor* cur, int plan, const char*, int argc,
           sqlite3_value** argv) {
  Of(cur).Filter(plan, argc, argv);
  return SQLITE_OK;
}

int Next(sqlite3_vtab_cursor* cur) {
  Of(cur).Next();
  return SQLITE_OK;
}

int Eof(sqlite3_vtab_cursor* cur) { return Of(cur).Eof() ? 1 : 0; }

int Column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int column) {
  Of(cur).Column(ctx, column);
  return SQLITE_OK;
}

int Rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
  *rowid = Of(cur).Rowid();
  return SQLITE_OK;
}

sqlite3_module MakeModule() {
  sqlite3_module m;
  std::memset(&m, 0, sizeof m);
  m.iVersion = 0;
  m.xCreate = nullptr;  // eponymous only: no CREATE VIRTUAL TABLE
  m.xConnect = Connect;
  m.xBestIndex = BestIndex;
  m.xDisconnect = Disconnect;
  m.xDestroy = Disconnect;
  m.xOpen = OpenCursor;
  m.xClose = CloseCursor;
  m.xFilter = Filter;
  m.xNext = Next;
  m.xEof = Eof;
  m.xColumn = Column;
  m.xRowid = Rowid;
  return m;
}

const sqlite3_module kModule = MakeModule();

class RowsCursor : public Cursor {
 public:
  explicit RowsCursor(const std::vector<std::vector<QueryValue>>& rows)
      : rows_(rows) {}
  void Filter(int, int, sqlite3_value**) override { at_ = 0; }
  void Next() override { ++at_; }
  bool Eof() const override { return at_ >= rows_.size(); }
  void Column(sqlite3_context* ctx, int column) override {
    const auto& row = rows_[at_];
    if (column >= 0 && static_cast<size_t>(column) < row.size()) {
      ResultValue(ctx, row[static_cast<size_t>(column)]);
    } else {
      sqlite3_result_null(ctx);
    }
  }
  int64_t Rowid() const override { return static_cast<int64_t>(at_); }

 private:
  const std::vector<std::vector<QueryValue>>& rows_;
  size_t at_ = 0;
};

}  // namespace

int Register(sqlite3* db, const char* name, Table* table) {
  return sqlite3_create_module_v2(db, name, &kModule, table, nullptr);
}

void ResultValue(sqlite3_context* ctx, const QueryValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    sqlite3_result_int64(ctx, *i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    sqlite3_result_double(ctx, *d);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    sqlite3_result_text(ctx, s->data(), static_cast<int>(s->size()),
                        SQLITE_TRANSIENT);
  } else {
    sqlite3_result_null(ctx);
  }
}

std::string RowsTable::Schema() const {
  std::string s = "CREATE TABLE x(";
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (i > 0) s += ", ";
    s += columns_[i];
  }
  return s + ")";
}

const RowsTable::Rows& RowsTable::rows() {
  if (!rows_) rows_ = build_();
  return *rows_;
}

int RowsTable::BestIndex(sqlite3_index_info* info) {
  info->estimatedRows = static_cast<sqlite3_int64>(rows().size());
  info->estimatedCost = static_cast<double>(rows().size()) + 1;
  return SQLITE_OK;
}

std::unique_ptr<Cursor> RowsTable::Open() {
  return std::make_unique<RowsCursor>(rows());
}

}  // namespace podscope::viewer::query
