// The native aggregate path of `podscope query` (viewer/core
// query_fast.h): every statement of the shape it takes gives the rows
// SQLite gives (values, types, order), on hand-written statements and on
// randomly generated ones over generated sessions; every other shape goes
// to SQLite and still answers.
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pod_trace.h"
#include "podscope/viewer/session_query.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {
namespace {

using analysis_testing::RankTrace;
using Row = std::vector<QueryValue>;

struct Answer {
  absl::Status status;
  std::vector<std::string> columns;
  std::vector<Row> rows;
  bool fast = false;
};

std::string Show(const Row& r) {
  std::string out;
  for (const QueryValue& v : r) {
    if (!out.empty()) out += " | ";
    if (const auto* i = std::get_if<int64_t>(&v)) {
      out += std::to_string(*i);
    } else if (const auto* d = std::get_if<double>(&v)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g (real)", *d);
      out += buf;
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      out += "'" + *s + "'";
    } else {
      out += "NULL";
    }
  }
  return out;
}

// A session of `ranks` processes (two per host) with a main thread, a
// loader thread and a device stream each: nested slices of a few names,
// some empty, some longer than 4.3 s, some after gaps of more than 4.3 s,
// and on the device stream slices that overlap without nesting (laid out
// again in lanes). `base_ns` is the first start.
std::string WriteRandomSession(const std::string& name, uint64_t seed,
                               int ranks, int64_t base_ns) {
  const std::string dir = analysis_testing::FreshDir(name);
  std::mt19937_64 rng(seed);
  const std::vector<std::string> names = {
      "a",    "b",          "ab",  "B",           "Zz",
      "conv", "all_reduce", "x y", "caf\xc3\xa9", "a\xff"};
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int r = 0; r < ranks; ++r) {
    auto t = RankTrace::Create(dir + "/r" + std::to_string(r) + ".podtrace",
                               "host" + std::to_string(r / 2), r, ranks);
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return "";
    RankTrace& w = **t;
    const uint32_t tracks[] = {w.Thread("main"), w.Thread("loader"),
                               w.Device("stream", r)};
    for (uint32_t track : tracks) {
      int64_t ts = base_ns + static_cast<int64_t>(rng() % 1000);
      const int top = 20 + static_cast<int>(pick(40));
      for (int k = 0; k < top; ++k) {
        int64_t dur = static_cast<int64_t>(rng() % 2'000'000);
        if (pick(20) == 0) dur = 0;
        if (pick(40) == 0) dur = 5'000'000'000;  // past 2^32 ns
        w.Slice(track, ts, dur, names[pick(names.size())]);
        if (track == tracks[2] && pick(4) == 0) {
          // Overlaps its predecessor without nesting in it.
          w.Slice(track, ts + dur / 2 + 1, dur, names[pick(names.size())]);
        } else if (dur > 10) {
          // Children, some with children of their own.
          int64_t at = ts;
          const int children = static_cast<int>(pick(4));
          for (int c = 0; c < children && at < ts + dur; ++c) {
            const int64_t left = ts + dur - at;
            const int64_t d = static_cast<int64_t>(rng() % (left / 2 + 1));
            w.Slice(track, at, d, names[pick(names.size())]);
            if (d > 4 && pick(2) == 0) {
              w.Slice(track, at + 1, d / 2, names[pick(names.size())]);
            }
            at += d + static_cast<int64_t>(rng() % (left / 4 + 1));
          }
        }
        ts += std::max<int64_t>(dur, 1) + static_cast<int64_t>(rng() % 50'000);
        if (pick(30) == 0) ts += 6'000'000'000;  // a long gap
      }
    }
    EXPECT_TRUE(w.Close().ok());
  }
  return dir;
}

class FastQueryTest : public ::testing::Test {
 protected:
  void Open(const std::string& dir) {
    auto store = TraceStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    auto fast = SessionQuery::Create(*store_);
    ASSERT_TRUE(fast.ok()) << fast.status();
    fast_ = std::move(*fast);
    SessionQueryOptions reference_options;
    reference_options.native_aggregates = false;
    auto reference = SessionQuery::Create(*store_, reference_options);
    ASSERT_TRUE(reference.ok()) << reference.status();
    reference_ = std::move(*reference);
  }

  static Answer Ask(SessionQuery& q, const std::string& sql) {
    Answer a;
    const uint64_t before = q.fast_path_runs();
    a.status = q.Run(sql, &a.columns, [&](const Row& r) {
      a.rows.push_back(r);
      return true;
    });
    a.fast = q.fast_path_runs() > before;
    return a;
  }

  // Runs `sql` both ways and compares everything; returns whether the
  // native path answered.
  bool Compare(const std::string& sql) {
    const Answer want = Ask(*reference_, sql);
    const Answer got = Ask(*fast_, sql);
    EXPECT_FALSE(want.fast);
    EXPECT_EQ(got.status, want.status) << sql;
    EXPECT_EQ(got.columns, want.columns) << sql;
    EXPECT_EQ(got.rows.size(), want.rows.size()) << sql;
    for (size_t i = 0; i < std::min(got.rows.size(), want.rows.size()); ++i) {
      if (got.rows[i] != want.rows[i]) {
        ADD_FAILURE() << sql << "\n row " << i << ": got " << Show(got.rows[i])
                      << "\n want " << Show(want.rows[i]);
        break;
      }
    }
    return got.fast;
  }

  std::unique_ptr<TraceStore> store_;
  std::unique_ptr<SessionQuery> fast_, reference_;
};

TEST_F(FastQueryTest, CommonAggregatesTakeTheNativePathWithSqlitesRows) {
  Open(WriteRandomSession("fast-common", 7, 4, 1'000'000));
  const char* statements[] = {
      "SELECT name, sum(dur) FROM slices GROUP BY name",
      "select NAME, SUM(DUR) from SLICES group by NAME;",
      "SELECT count(*) FROM slices",
      "SELECT count(*), sum(dur), total(dur), avg(dur), min(dur), max(dur), "
      "min(ts), max(ts), avg(ts), sum(depth), avg(rank) FROM slices",
      "SELECT rank, name, count(*) AS n, sum(dur) AS total_ns FROM slices "
      "GROUP BY rank, name ORDER BY total_ns DESC LIMIT 10",
      "SELECT host, thread, depth, count(*) FROM slices GROUP BY host, "
      "thread, depth",
      "SELECT track, pid, max(dur) FROM slices WHERE rank = 1 GROUP BY "
      "track, pid ORDER BY 3",
      "SELECT name, count(*) FROM slices WHERE ts >= 1200000 AND ts < "
      "90000000 AND dur > 1000 GROUP BY name ORDER BY count(*) DESC, name",
      "SELECT name, avg(dur) AS mean FROM slices WHERE name != 'a' AND name "
      ">= 'B' GROUP BY name ORDER BY mean",
      "SELECT depth, count(*) FROM slices WHERE depth BETWEEN 1 AND 2 GROUP "
      "BY depth",
      "SELECT name FROM slices GROUP BY name ORDER BY name DESC LIMIT 3 "
      "OFFSET 2",
      "SELECT name, count(*) FROM slices GROUP BY name ORDER BY 2 LIMIT 2, 3",
      "SELECT count(*), sum(dur), avg(dur), min(ts), total(dur) FROM slices "
      "WHERE rank = 99",
      "SELECT name, sum(dur) FROM slices WHERE rank = 99 GROUP BY name",
      "SELECT name, sum(dur) FROM slices WHERE host = 'host1' AND thread = "
      "'stream' GROUP BY name ORDER BY sum(dur) DESC",
      "SELECT rank, count(*) FROM slices WHERE ts > 9223372036854775807 "
      "GROUP BY rank",
      "SELECT rank, count(*) FROM slices WHERE ts = 1000000 OR 0 GROUP BY "
      "rank",
  };
  int fast = 0;
  for (const char* sql : statements) fast += Compare(sql) ? 1 : 0;
  // All but the last (OR) are the native shape.
  EXPECT_EQ(fast, static_cast<int>(std::size(statements)) - 1);
}

// Random statements of the native shape over random sessions, both ways.
TEST_F(FastQueryTest, RandomStatementsGiveSqlitesRows) {
  const char* group_columns[] = {"name", "host",  "thread", "rank",
                                 "pid",  "track", "depth"};
  const char* int_columns[] = {"ts", "dur", "depth", "rank", "pid", "track"};
  const char* aggregates[] = {"sum", "total", "avg", "min",
                              "max", "count", "SUM", "Avg"};
  const char* names[] = {"a", "b", "ab", "B", "conv", "nope"};
  const char* ops[] = {"=", "==", "!=", "<>", "<", "<=", ">", ">="};
  int fast_total = 0, statements = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    // A small clock keeps avg(ts) exact; a realtime-sized one does not
    // (SQLite answers those).
    const int64_t base = seed == 4 ? 1'700'000'000'000'000'000 : 5'000'000;
    Open(WriteRandomSession("fast-random-" + std::to_string(seed), seed,
                            2 + static_cast<int>(seed), base));
    std::mt19937_64 rng(seed * 7919);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    for (int q = 0; q < 400; ++q) {
      std::vector<std::string> group;
      const size_t groups = pick(4);
      for (size_t g = 0; g < groups; ++g) {
        group.push_back(group_columns[pick(std::size(group_columns))]);
      }
      std::vector<std::string> items;  // as written in SELECT
      std::vector<std::string> sortable;
      for (const std::string& g : group) {
        if (pick(3) != 0) items.push_back(g);
      }
      const size_t aggs = (group.empty() ? 1 : 0) + pick(3);
      int alias = 0;
      for (size_t a = 0; a < aggs; ++a) {
        std::string f = aggregates[pick(std::size(aggregates))];
        std::string arg = int_columns[pick(std::size(int_columns))];
        if (f == "count" && pick(2) == 0) arg = "*";
        std::string item = f + "(" + arg + ")";
        sortable.push_back(item);
        if (pick(2) == 0) {
          const std::string as = "v" + std::to_string(alias++);
          item += " AS " + as;
          sortable.push_back(as);
        }
        items.push_back(item);
      }
      if (items.empty()) items.push_back("count(*)");
      std::shuffle(items.begin(), items.end(), rng);
      std::string sql = "SELECT ";
      for (size_t i = 0; i < items.size(); ++i) {
        sql += (i ? ", " : "") + items[i];
      }
      sql += " FROM slices";
      const size_t preds = pick(4);
      for (size_t p = 0; p < preds; ++p) {
        sql += p == 0 ? " WHERE " : " AND ";
        switch (pick(6)) {
          case 0:
            sql += std::string("name ") + ops[pick(std::size(ops))] + " '" +
                   names[pick(std::size(names))] + "'";
            break;
          case 1:
            sql += "rank " + std::string(ops[pick(std::size(ops))]) + " " +
                   std::to_string(pick(4));
            break;
          case 2:
            sql += "dur " + std::string(ops[pick(std::size(ops))]) + " " +
                   std::to_string(pick(3) * 400'000);
            break;
          case 3: {
            const int64_t t = base + static_cast<int64_t>(pick(40'000'000));
            sql += "ts BETWEEN " + std::to_string(t) + " AND " +
                   std::to_string(t + static_cast<int64_t>(pick(80'000'000)));
            break;
          }
          case 4:
            sql += "depth " + std::string(ops[pick(std::size(ops))]) + " " +
                   std::to_string(pick(3));
            break;
          default:
            sql += std::string("host ") + ops[pick(std::size(ops))] + " 'host" +
                   std::to_string(pick(2)) + "'";
        }
      }
      if (!group.empty()) {
        sql += " GROUP BY ";
        for (size_t i = 0; i < group.size(); ++i) {
          sql += (i ? ", " : "") + group[i];
        }
        for (const std::string& g : group) sortable.push_back(g);
      }
      if (!sortable.empty() && pick(3) != 0) {
        sql += " ORDER BY ";
        const size_t terms = 1 + pick(2);
        for (size_t i = 0; i < terms; ++i) {
          std::string term = pick(5) == 0
                                 ? std::to_string(1 + pick(items.size()))
                                 : sortable[pick(sortable.size())];
          sql += (i ? ", " : "") + term + (pick(2) ? " DESC" : "");
        }
      }
      if (pick(3) == 0) {
        sql += " LIMIT " + std::to_string(pick(6));
        if (pick(2) == 0) sql += " OFFSET " + std::to_string(pick(4));
      }
      fast_total += Compare(sql) ? 1 : 0;
      ++statements;
    }
  }
  // Most take the native path; avg/total of ts over the realtime clock
  // and sums SQLite could not hold go to SQLite.
  EXPECT_GT(fast_total, statements * 3 / 5);
}

TEST_F(FastQueryTest, OtherShapesGoToSqliteAndStillAnswer) {
  Open(WriteRandomSession("fast-other", 11, 3, 2'000'000));
  const char* statements[] = {
      // Not an aggregate.
      "SELECT name, dur FROM slices WHERE rank = 1 ORDER BY ts LIMIT 5",
      // Expressions, other functions, other clauses.
      "SELECT name, sum(dur) / 1000 FROM slices GROUP BY name",
      "SELECT name, sum(dur + 1) FROM slices GROUP BY name",
      "SELECT name, count(DISTINCT depth) FROM slices GROUP BY name",
      "SELECT name, group_concat(depth) FROM slices WHERE rank = 0 GROUP BY "
      "name",
      "SELECT name, sum(dur) FROM slices GROUP BY name HAVING sum(dur) > 0",
      "SELECT DISTINCT name FROM slices",
      "SELECT name, count(*) FROM slices WHERE rank = 1 OR rank = 2 GROUP BY "
      "name",
      "SELECT name, count(*) FROM slices WHERE name LIKE 'a%' GROUP BY name",
      "SELECT name, count(*) FROM slices WHERE rank IN (0, 1) GROUP BY name",
      "SELECT name, count(*) FROM slices WHERE NOT rank = 1 GROUP BY name",
      "SELECT name, count(*) FROM slices WHERE (rank = 1) GROUP BY name",
      "SELECT name, count(*) FROM slices WHERE +rank = 1 GROUP BY name",
      "SELECT name, count(*) FROM slices WHERE rank = '1' GROUP BY name",
      "SELECT name, count(*) FROM slices WHERE dur > 1e5 GROUP BY name",
      "SELECT name, count(*) FROM slices WHERE ts > 0x10 GROUP BY name",
      "SELECT name, count(*) FROM slices WHERE 1 = rank GROUP BY name",
      // Columns the native path does not read, or does not group by.
      "SELECT category, count(*) FROM slices GROUP BY category",
      "SELECT name, count(*) FROM slices WHERE args IS NULL GROUP BY name",
      "SELECT ts, count(*) FROM slices GROUP BY ts ORDER BY 2 DESC LIMIT 3",
      "SELECT min(name), max(host) FROM slices",
      "SELECT sum(id) FROM slices",
      // A bare column (SQLite takes it from one row).
      "SELECT name, max(dur) FROM slices",
      "SELECT name, rank, count(*) FROM slices GROUP BY name",
      // Spellings the strict parser refuses.
      "SELECT \"name\", count(*) FROM slices GROUP BY name",
      "SELECT name, count(*) FROM slices /* c */ GROUP BY name",
      "SELECT name, count(*) FROM slices GROUP BY name -- c",
      "SELECT name, count(*) total FROM slices GROUP BY name",
      "SELECT name, count(*) AS dur FROM slices GROUP BY name ORDER BY dur",
      "SELECT name, count(*) AS n, sum(dur) AS N FROM slices GROUP BY name",
      "SELECT name AS n, count(*) FROM slices GROUP BY n",
      "SELECT name, count(*) FROM slices GROUP BY 1",
      "SELECT name, count(*) FROM main.slices GROUP BY name",
      "SELECT name, count(*) FROM slices s GROUP BY name",
      "SELECT name, count(*) FROM slices GROUP BY name ORDER BY name "
      "COLLATE NOCASE",
      "SELECT name, count(*) FROM slices GROUP BY name ORDER BY name NULLS "
      "LAST",
      "SELECT name, count(*) FROM slices GROUP BY name ORDER BY -count(*)",
      "SELECT name, count(*) FROM slices GROUP BY name LIMIT -1",
      "SELECT name, count(*) FROM slices GROUP BY name LIMIT 1 + 1",
      "WITH x AS (SELECT * FROM slices) SELECT name, count(*) FROM x GROUP BY "
      "name",
      "SELECT name, count(*) FROM (SELECT * FROM slices) GROUP BY name",
      "SELECT rank, count(*) FROM slices JOIN processes USING (rank) GROUP "
      "BY rank",
      "SELECT name, count(*) OVER () FROM slices LIMIT 3",
      "SELECT name, count(*) FROM slices GROUP BY name UNION ALL SELECT "
      "'x', 1",
      "SELECT count(*) FROM counters",
  };
  for (const char* sql : statements) {
    EXPECT_FALSE(Compare(sql)) << sql;
  }
}

TEST_F(FastQueryTest, SumsSqliteWouldRoundOrRefuseGoToSqlite) {
  // Starts around 1.7e18 ns: summing two overflows int64 (SQLite reports
  // the overflow) and their average is not exact in a double.
  Open(WriteRandomSession("fast-big", 5, 2, 1'700'000'000'000'000'000));
  EXPECT_FALSE(Compare("SELECT name, avg(ts) FROM slices GROUP BY name"));
  EXPECT_FALSE(Compare("SELECT total(ts) FROM slices"));
  EXPECT_FALSE(Compare("SELECT sum(ts) FROM slices"));
  const Answer overflow = Ask(*reference_, "SELECT sum(ts) FROM slices");
  EXPECT_NE(overflow.status.message().find("integer overflow"),
            std::string::npos)
      << overflow.status;
  // The rest of the same statement shape stays native.
  EXPECT_TRUE(
      Compare("SELECT name, min(ts), max(ts) FROM slices GROUP BY "
              "name"));
}

// A statement is user input: mutations of native statements (tokens and
// bytes inserted, dropped or swapped) either fail as SQLite fails them or
// give SQLite's rows, whichever path answers.
TEST_F(FastQueryTest, MutatedStatementsGiveSqlitesAnswers) {
  Open(WriteRandomSession("fast-mutated", 19, 3, 3'000'000));
  const std::string seeds[] = {
      "SELECT name, sum(dur) AS s FROM slices WHERE rank = 1 AND ts >= "
      "3000000 GROUP BY name ORDER BY s DESC LIMIT 3",
      "SELECT host, depth, count(*), avg(dur), min(ts) FROM slices WHERE "
      "name != 'a' AND dur BETWEEN 10 AND 900000 GROUP BY host, depth "
      "ORDER BY 3, 1",
      "SELECT count(*), total(dur), max(depth) FROM slices WHERE thread = "
      "'main' AND depth <= 1"};
  const std::string pieces[] = {
      " ",        ",",    "(",     ")",      "*",      "'",      "''",
      "-",        "--",   "/*",    "=",      "<",      ">=",     "1",
      "-1",       "1.5",  "0x1",   "\"",     "AS",     "AND",    "OR",
      "NOT",      "BY",   "LIMIT", "OFFSET", "DESC",   "name",   "ts",
      "dur",      "rank", "sum",   "count",  "avg",    "min(",   "x",
      "\xc3\xa9", ";",    "GROUP", "ORDER",  "HAVING", "slices", "category"};
  std::mt19937_64 rng(23);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int fast = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string sql = seeds[pick(std::size(seeds))];
    const int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits; ++e) {
      const size_t at = pick(sql.size() + 1);
      switch (pick(3)) {
        case 0:
          sql.insert(at, pieces[pick(std::size(pieces))]);
          break;
        case 1:
          sql.erase(at, 1 + pick(6));
          break;
        default:
          if (at < sql.size()) sql[at] = static_cast<char>(rng() & 0x7f);
      }
    }
    fast += Compare(sql) ? 1 : 0;
  }
  // Some mutations keep the native shape (a changed literal or name).
  EXPECT_GT(fast, 0);
}

// Long lists stay with SQLite, answered in the time SQLite takes.
TEST_F(FastQueryTest, LongStatementsGoToSqlite) {
  Open(WriteRandomSession("fast-long", 29, 2, 1'000'000));
  std::string items = "count(*)";
  for (int i = 0; i < 1500; ++i) items += ", sum(dur)";
  EXPECT_FALSE(Compare("SELECT " + items + " FROM slices"));
  std::string where = "rank >= 0";
  for (int i = 0; i < 200; ++i) where += " AND dur >= " + std::to_string(i);
  EXPECT_FALSE(Compare("SELECT name, count(*) FROM slices WHERE " + where +
                       " GROUP BY name"));
}

TEST_F(FastQueryTest, ManyGroupsGoToSqlite) {
  Open(WriteRandomSession("fast-groups", 17, 2, 1'000'000));
  SessionQueryOptions small;
  small.native_max_groups = 8;
  auto capped = SessionQuery::Create(*store_, small);
  ASSERT_TRUE(capped.ok());
  const std::string few = "SELECT depth, count(*) FROM slices GROUP BY depth";
  const std::string many =
      "SELECT track, name, depth, sum(dur) FROM slices GROUP BY track, name, "
      "depth";
  const Answer a = Ask(**capped, few), b = Ask(**capped, many);
  EXPECT_TRUE(a.fast);
  EXPECT_FALSE(b.fast);
  EXPECT_GT(b.rows.size(), 8u);
  EXPECT_EQ(b.rows, Ask(*reference_, many).rows);
  EXPECT_EQ(a.rows, Ask(*reference_, few).rows);
}

TEST_F(FastQueryTest, ATableNamedSlicesHidesTheStoresAndIsRead) {
  Open(WriteRandomSession("fast-shadow", 3, 2, 1'000'000));
  EXPECT_TRUE(Compare("SELECT count(*) FROM slices"));
  std::vector<std::string> columns;
  for (SessionQuery* q : {fast_.get(), reference_.get()}) {
    ASSERT_TRUE(q->Run("CREATE TEMP TABLE slices(name TEXT, dur INTEGER)",
                       &columns, [](const Row&) { return true; })
                    .ok());
    ASSERT_TRUE(q->Run("INSERT INTO slices VALUES ('x', 5), ('x', 7)", &columns,
                       [](const Row&) { return true; })
                    .ok());
  }
  EXPECT_FALSE(Compare("SELECT name, sum(dur) FROM slices GROUP BY name"));
  const Answer a =
      Ask(*fast_, "SELECT name, sum(dur) FROM slices GROUP BY name");
  ASSERT_EQ(a.rows.size(), 1u);
  EXPECT_EQ(a.rows[0], (Row{std::string("x"), int64_t{12}}));
}

// Statements SQLite answers, grouped or ordered in the order `slices`
// lists its rows: SQLite streams them without its sorter, and the rows
// are those of the sorted statement (a unary + hides the column from the
// table, so SQLite sorts).
TEST_F(FastQueryTest, GroupingsInTheTablesOwnOrderSkipSqlitesSorter) {
  Open(WriteRandomSession("fast-order", 13, 4, 1'000'000));
  auto plan = [&](const std::string& sql) {
    std::string text;
    for (const Row& r : Ask(*fast_, "EXPLAIN QUERY PLAN " + sql).rows) {
      text += std::get<std::string>(r.back()) + "\n";
    }
    return text;
  };
  const std::pair<std::string, std::string> streamed[] = {
      {"SELECT track, count(*), sum(dur + 0) FROM slices GROUP BY track",
       "SELECT track, count(*), sum(dur + 0) FROM slices GROUP BY +track"},
      {"SELECT host, rank, max(dur * 2) FROM slices GROUP BY host, rank",
       "SELECT host, rank, max(dur * 2) FROM slices GROUP BY +host, +rank"},
      {"SELECT id, name FROM slices WHERE rank = 1 ORDER BY id",
       "SELECT id, name FROM slices WHERE rank = 1 ORDER BY +id"},
      {"SELECT rank, track, group_concat(name) FROM slices GROUP BY rank, "
       "track ORDER BY rank, track",
       "SELECT rank, track, group_concat(name) FROM slices GROUP BY +rank, "
       "+track ORDER BY +rank, +track"},
  };
  for (const auto& [sql, sorted] : streamed) {
    EXPECT_EQ(plan(sql).find("TEMP B-TREE"), std::string::npos) << sql << "\n"
                                                                << plan(sql);
    EXPECT_NE(plan(sorted).find("TEMP B-TREE"), std::string::npos)
        << plan(sorted);
    const Answer a = Ask(*fast_, sql), b = Ask(*fast_, sorted);
    EXPECT_TRUE(a.status.ok()) << a.status;
    EXPECT_FALSE(a.rows.empty());
    EXPECT_EQ(a.rows, b.rows) << sql;
  }
  // On the inner side of a join the table's order is not the result's:
  // SQLite still sorts what needs sorting.
  for (const char* order : {"s.id", "s.track, s.id"}) {
    const std::string join =
        "SELECT p.process_id, s.id FROM processes p JOIN slices s ON s.rank "
        "= 3 - p.rank ORDER BY ";
    const Answer a = Ask(*fast_, join + order);
    const Answer b = Ask(*fast_, join + "+" + order);
    EXPECT_TRUE(a.status.ok()) << a.status;
    EXPECT_FALSE(a.rows.empty());
    EXPECT_EQ(a.rows, b.rows) << order;
  }
  // Not the table's order: SQLite sorts.
  for (const char* sql :
       {"SELECT name, sum(dur + 0) FROM slices GROUP BY name",
        "SELECT track, count(*) FROM slices GROUP BY track ORDER BY track "
        "DESC",
        "SELECT thread, count(*) FROM slices GROUP BY thread"}) {
    EXPECT_NE(plan(sql).find("TEMP B-TREE"), std::string::npos) << sql;
  }
}

TEST_F(FastQueryTest, StoppingEarlyDeliversNoMoreRows) {
  Open(WriteRandomSession("fast-stop", 9, 2, 1'000'000));
  std::vector<std::string> columns;
  int rows = 0;
  ASSERT_TRUE(fast_
                  ->Run("SELECT name, count(*) FROM slices GROUP BY name",
                        &columns,
                        [&](const Row&) {
                          ++rows;
                          return rows < 2;
                        })
                  .ok());
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(fast_->fast_path_runs(), 1u);
}

}  // namespace
}  // namespace podscope::viewer
