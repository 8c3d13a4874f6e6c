// SQL over a session (viewer/core session_query.h): every virtual table's
// rows equal the store's (count and contents) on generated sessions, and
// the constraints pushed into the store give the same rows as a full scan
// while visiting fewer.
#include "podscope/viewer/session_query.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "pod_trace.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {
namespace {

using analysis_testing::TrainingJobShape;
using analysis_testing::WriteTrainingJob;
using Row = std::vector<QueryValue>;

class SessionQueryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    TrainingJobShape shape;
    shape.steps = 12;
    shape.recompile_at = 6;
    auto store = TraceStore::Open(WriteTrainingJob("query", shape));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store).release();
  }
  static void TearDownTestSuite() { delete store_; }

  void SetUp() override {
    auto q = SessionQuery::Create(*store_);
    ASSERT_TRUE(q.ok()) << q.status();
    q_ = std::move(*q);
  }

  std::vector<Row> Query(const std::string& sql) {
    std::vector<Row> rows;
    std::vector<std::string> columns;
    const absl::Status s = q_->Run(sql, &columns, [&](const Row& r) {
      rows.push_back(r);
      return true;
    });
    EXPECT_TRUE(s.ok()) << sql << ": " << s;
    return rows;
  }
  static int64_t I(const QueryValue& v) { return std::get<int64_t>(v); }
  static std::string S(const QueryValue& v) { return std::get<std::string>(v); }

  static TraceStore* store_;
  std::unique_ptr<SessionQuery> q_;
};
TraceStore* SessionQueryTest::store_ = nullptr;

TEST_F(SessionQueryTest, SlicesAreTheStoresSlices) {
  // (track, start, duration, name) of every slice, from the store...
  std::multiset<std::tuple<int64_t, int64_t, int64_t, std::string>> want;
  for (const TrackInfo& t : store_->tracks()) {
    const SliceColumns& s = store_->data(t.id).slices;
    for (uint32_t i = 0; i < s.size(); ++i) {
      want.insert({t.id, s.start(i), s.duration(i),
                   std::string(store_->str(s.name(i)))});
    }
  }
  // ... and from SQL.
  std::multiset<std::tuple<int64_t, int64_t, int64_t, std::string>> got;
  for (const Row& r : Query("SELECT track, ts, dur, name FROM slices")) {
    got.insert({I(r[0]), I(r[1]), I(r[2]), S(r[3])});
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), 4u * (12 * 6 + 2));  // 6 slices a step, 2 compiles

  // Ranks, hosts, depth and parents as the generator wrote them.
  const auto forward = Query(
      "SELECT s.rank, s.host, s.depth, p.name FROM slices s JOIN slices p "
      "ON p.id = s.parent_id WHERE s.name = 'forward' AND s.rank = 2");
  ASSERT_EQ(forward.size(), 12u);
  for (const Row& r : forward) {
    EXPECT_EQ(I(r[0]), 2);
    EXPECT_EQ(S(r[1]), "host2");
    EXPECT_EQ(I(r[2]), 1);
    EXPECT_EQ(S(r[3]), "train_step");
  }
  // Arguments as JSON; categories.
  const auto ar = Query(
      "SELECT args, category FROM slices WHERE name = 'all_reduce' AND rank "
      "= 0 ORDER BY ts LIMIT 1");
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_NE(S(ar[0][0]).find("\"collective_id\":\"world#0\""),
            std::string::npos)
      << S(ar[0][0]);
  EXPECT_EQ(S(ar[0][1]), "collective");
  const auto cats = Query(
      "SELECT category, count(*) FROM slices WHERE rank = 1 GROUP BY "
      "category ORDER BY category");
  ASSERT_EQ(cats.size(), 4u);
  EXPECT_EQ(S(cats[0][0]), "collective");
  EXPECT_EQ(I(cats[0][1]), 12);
  EXPECT_EQ(S(cats[1][0]), "data_loading");
  EXPECT_EQ(I(cats[1][1]), 12);
  EXPECT_EQ(S(cats[2][0]), "device");
  EXPECT_EQ(I(cats[2][1]), 24);
}

TEST_F(SessionQueryTest, PushedConstraintsGiveTheFullScansRows) {
  const int64_t t0 = store_->first_ns() + 20'000'000;
  const int64_t t1 = t0 + 15'000'000;
  const std::string window =
      " ts >= " + std::to_string(t0) + " AND ts < " + std::to_string(t1);
  const std::string pushed =
      "SELECT id FROM slices WHERE rank = 3 AND name = 'conv2d' AND" + window +
      " ORDER BY id";
  // A unary + keeps a constraint from reaching the table: a full scan.
  const std::string scanned =
      "SELECT id FROM slices WHERE +rank = 3 AND +name = 'conv2d' AND +ts >= " +
      std::to_string(t0) + " AND +ts < " + std::to_string(t1) + " ORDER BY id";
  const auto a = Query(pushed);
  const uint64_t visited_pushed = q_->slices_visited();
  const auto b = Query(scanned);
  const uint64_t visited_scan = q_->slices_visited();
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.empty());
  EXPECT_LT(visited_pushed * 10, visited_scan);
  EXPECT_EQ(visited_scan, store_->event_count());

  // Each constraint alone, and equality on ts, and a host.
  for (const std::string& where :
       {std::string("rank = 0"), std::string("host = 'host1'"),
        std::string("name = 'matmul'"), window,
        "ts = " + std::to_string(store_->first_ns()),
        std::string("name = 'no such name'"), std::string("rank = 99")}) {
    std::string plus = where;
    for (const char* col : {"rank", "host", "name", "ts"}) {
      const std::string c(col);
      for (size_t at = plus.find(c); at != std::string::npos;
           at = plus.find(c, at + c.size() + 1)) {
        if (at == 0 || plus[at - 1] == ' ') {
          plus.insert(at, "+");
        }
      }
    }
    EXPECT_EQ(Query("SELECT id FROM slices WHERE " + where + " ORDER BY id"),
              Query("SELECT id FROM slices WHERE " + plus + " ORDER BY id"))
        << where << " vs " << plus;
  }
}

TEST_F(SessionQueryTest, DerivedTablesMatchTheAnalyses) {
  const StepBreakdown steps = AnalyzeSteps(*store_);
  size_t cells = 0;
  for (const StepRow& r : steps.rows) {
    for (const StepCell& c : r.ranks) cells += c.present ? 1 : 0;
  }
  EXPECT_EQ(Query("SELECT * FROM steps").size(), cells);
  const auto step3 =
      Query("SELECT dur, compute_ns FROM steps WHERE rank = 2 AND step = 3");
  ASSERT_EQ(step3.size(), 1u);
  EXPECT_EQ(I(step3[0][0]), steps.rows[3].ranks[2].duration_ns);
  EXPECT_EQ(I(step3[0][1]),
            steps.rows[3].ranks[2].category(StepCategory::kCompute));
  // One arrival per rank per collective, exactly one of them last.
  EXPECT_EQ(Query("SELECT * FROM collectives").size(), 4u * 12);
  const auto last = Query(
      "SELECT key, sum(last) FROM collectives GROUP BY key HAVING sum(last) "
      "!= 1");
  EXPECT_TRUE(last.empty());
  const auto compiles = Query(
      "SELECT rank, step, signature, late FROM compiles WHERE step = 6 "
      "ORDER BY rank");
  ASSERT_EQ(compiles.size(), 4u);
  EXPECT_EQ(S(compiles[0][2]), "f32[17,784]");
  EXPECT_EQ(I(compiles[0][3]), 1);
  EXPECT_EQ(Query("SELECT * FROM processes").size(), 4u);
  EXPECT_EQ(Query("SELECT * FROM threads").size(), store_->tracks().size());
  EXPECT_EQ(Query("SELECT * FROM counters").size(), 0u);
}

TEST_F(SessionQueryTest, BadStatementsAreRefusedWithAReason) {
  std::vector<std::string> columns;
  auto run = [&](const std::string& sql) {
    return q_->Run(sql, &columns, [](const Row&) { return true; });
  };
  absl::Status s = run("SELEC 1");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("syntax error"), std::string::npos) << s;
  s = run("SELECT nope FROM slices");
  EXPECT_NE(s.message().find("no such column: nope"), std::string::npos) << s;
  s = run("SELECT 1; SELECT 2");
  EXPECT_NE(s.message().find("one statement"), std::string::npos) << s;
  // No file is attached on a statement's behalf.
  s = run("ATTACH DATABASE '/tmp/podscope-query-attach.db' AS x");
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(std::filesystem::exists("/tmp/podscope-query-attach.db"));
  // The tables are read-only.
  EXPECT_FALSE(run("DELETE FROM slices").ok());
  EXPECT_FALSE(run("").ok());
}

}  // namespace
}  // namespace podscope::viewer
