// `podscope diff` as a user runs it: on two written training jobs, one
// with an op slower on one rank, as text, as JSON and as a CI gate; and on
// bad input (a missing session, a malformed or unknown --fail_if). And
// `podscope query` on the same sessions: a table, CSV, JSON, and a
// statement SQLite rejects.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pod_trace.h"
#include "run_podscope.h"
#include "simdjson.h"

namespace podscope::tools {
namespace {

using analysis_testing::TrainingJobShape;
using analysis_testing::WriteTrainingJob;
using ::testing::HasSubstr;
using testing::RunPodscope;
using testing::RunResult;

// A JSON number, written as an integer when it is whole.
double Number(simdjson::dom::element e) {
  if (e.is_int64()) return static_cast<double>(e.get_int64().value());
  if (e.is_uint64()) return static_cast<double>(e.get_uint64().value());
  return e.get_double().value();
}

struct Pair {
  std::string base, cand;
};

// Rank 1's conv2d 30 % slower in the candidate.
const Pair& SlowerConvPair() {
  static const Pair* pair = [] {
    TrainingJobShape base, cand;
    cand.seed = 7;
    cand.scale = [](int rank, int, const std::string& op) {
      return rank == 1 && op == "conv2d" ? 1.3 : 1.0;
    };
    return new Pair{WriteTrainingJob("cli-diff-base", base),
                    WriteTrainingJob("cli-diff-cand", cand)};
  }();
  return *pair;
}

TEST(DiffCliTest, TextNamesTheChangeAndTheRank) {
  const Pair& p = SlowerConvPair();
  const RunResult r = RunPodscope({"diff", p.base, p.cand});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Step time: slower by +"));
  EXPECT_THAT(r.out, HasSubstr("largest change: rank 1"));
  EXPECT_THAT(r.out, HasSubstr("op:conv2d"));
  EXPECT_THAT(r.out, HasSubstr("most on rank 1: +"));
  EXPECT_THAT(r.out, HasSubstr("steps matched by number"));
}

TEST(DiffCliTest, FailIfMakesTheExitStatusAGate) {
  const Pair& p = SlowerConvPair();
  RunResult r = RunPodscope(
      {"diff", "--fail_if", "step_ms.median > +5% and p<0.01", p.base, p.cand});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAILED step_ms.median > +5% and p<0.01"));
  // A bar the change does not reach; and the same job against itself.
  r = RunPodscope(
      {"diff", "--fail_if", "step_ms.median > +50%", p.base, p.cand});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = RunPodscope({"diff", "--fail_if", "step_ms.median > +1%", "--fail_if",
                   "recompiles.new > 0", p.base, p.base});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("no significant change"));
}

TEST(DiffCliTest, JsonHasEveryFigureByName) {
  const Pair& p = SlowerConvPair();
  const RunResult r = RunPodscope({"diff", "--json", p.base, p.cand});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  auto doc = parser.parse(r.out);
  ASSERT_FALSE(doc.error()) << r.out.substr(0, 2000);
  simdjson::dom::element d = doc.value_unsafe();
  EXPECT_EQ(d["ranks"].get_uint64().value(), 4u);
  EXPECT_EQ(d["largest_change_rank"].get_int64().value(), 1);
  simdjson::dom::element median = d["step_median"];
  EXPECT_EQ(std::string_view(median["name"].get_string().value()),
            "step_ms.median");
  EXPECT_TRUE(median["significant"].get_bool().value());
  EXPECT_GT(Number(median["delta_ns"]), 0);
  EXPECT_LT(Number(median["p_value"]), 0.01);
  bool conv = false;
  simdjson::dom::array changes = d["changes"].get_array().value();
  for (simdjson::dom::element c : changes) {
    simdjson::dom::element figure = c["figure"].value();
    if (std::string_view(figure["name"].get_string().value()) == "op:conv2d") {
      conv = true;
      EXPECT_EQ(c["rank"].get_int64().value(), 1);
      EXPECT_TRUE(figure["significant"].get_bool().value());
    }
  }
  EXPECT_TRUE(conv);
  EXPECT_EQ(d["per_rank"].get_array().value().size(), 4u);
}

TEST(DiffCliTest, BadInputIsNamed) {
  const Pair& p = SlowerConvPair();
  RunResult r = RunPodscope({"diff", p.base});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("expects two sessions"));
  r = RunPodscope({"diff", p.base, "/nonexistent/session"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("candidate"));
  r = RunPodscope({"diff", "--fail_if", "step_ms.median > 5", p.base, p.cand});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("needs a unit"));
  r = RunPodscope({"diff", "--fail_if", "op:nope > 1%", p.base, p.cand});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no figure 'op:nope'"));
}

TEST(QueryCliTest, AnswersAsTableCsvAndJson) {
  const Pair& p = SlowerConvPair();
  const std::string sql =
      "SELECT rank, count(*) AS n, sum(dur) AS total FROM slices WHERE name "
      "= 'conv2d' GROUP BY rank ORDER BY total DESC";
  RunResult r = RunPodscope({"query", p.cand, sql});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith("rank  n   total"));
  EXPECT_THAT(r.out, HasSubstr("(4 rows)"));
  // Rank 1's conv2d is the slow one: first by total time.
  EXPECT_THAT(r.out, HasSubstr("\n1     40  "));

  r = RunPodscope({"query", "--csv", p.cand, sql});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith("rank,n,total\n1,40,"));

  r = RunPodscope({"query", "--json", p.cand, sql});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  auto doc = parser.parse(r.out);
  ASSERT_FALSE(doc.error()) << r.out;
  simdjson::dom::array rows = doc.value_unsafe().get_array().value();
  ASSERT_EQ(rows.size(), 4u);
  simdjson::dom::element first = rows.at(0).value();
  EXPECT_EQ(first["rank"].get_int64().value(), 1);
  EXPECT_EQ(first["n"].get_int64().value(), 40);

  r = RunPodscope({"query", p.cand, "SELECT nope FROM slices"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no such column: nope"));
  r = RunPodscope({"query", p.cand});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace podscope::tools
