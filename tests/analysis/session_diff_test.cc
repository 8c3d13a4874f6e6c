// `podscope diff`'s analysis (viewer/core session_diff.h) on pairs of
// generated training jobs with injected changes: each change is found with
// the right sign and rank, and a pair that differs only by noise reports
// no significant change. Plus the U test against values worked out by
// hand, and the --fail_if gates.
#include "podscope/viewer/session_diff.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "diff_gate.h"
#include "pod_trace.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {
namespace {

using analysis_testing::TrainingJobShape;
using analysis_testing::WriteTrainingJob;

std::unique_ptr<TraceStore> Open(const std::string& dir) {
  EXPECT_FALSE(dir.empty());
  auto store = TraceStore::Open(dir);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

SessionDiff Diff(const TrainingJobShape& base, const TrainingJobShape& cand,
                 const std::string& name) {
  auto b = Open(WriteTrainingJob(name + "-base", base));
  auto c = Open(WriteTrainingJob(name + "-cand", cand));
  if (!b || !c) return {};
  return DiffSessions(*b, *c);
}

const NamedChange* FindChange(const SessionDiff& d, const std::string& name) {
  for (const NamedChange& c : d.changes) {
    if (c.figure.name == name) return &c;
  }
  return nullptr;
}

TEST(MannWhitney, MatchesHandWorkedValues) {
  // Every candidate value above every baseline value: U = n1 * n2.
  const int64_t low[] = {1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t high[] = {11, 12, 13, 14, 15, 16, 17, 18};
  UTest t = MannWhitney(low, high);
  EXPECT_DOUBLE_EQ(t.u, 64);
  EXPECT_DOUBLE_EQ(t.effect, 1);
  // z = (64 - 32 - 0.5) / sqrt(8 * 8 * 17 / 12) = 3.31, p = 0.00093.
  EXPECT_NEAR(t.p_value, 0.00093, 0.00002);
  t = MannWhitney(high, low);
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_DOUBLE_EQ(t.effect, -1);
  // Interleaved samples: no evidence.
  const int64_t odd[] = {1, 3, 5, 7, 9, 11, 13, 15};
  const int64_t even[] = {2, 4, 6, 8, 10, 12, 14, 16};
  t = MannWhitney(odd, even);
  EXPECT_DOUBLE_EQ(t.u, 36);  // rank sum 72 - 8 * 9 / 2
  EXPECT_GT(t.p_value, 0.5);
  // All equal: ties everywhere, no evidence; empty: no test.
  const int64_t same[] = {5, 5, 5, 5};
  EXPECT_DOUBLE_EQ(MannWhitney(same, same).p_value, 1);
  EXPECT_DOUBLE_EQ(MannWhitney({}, same).p_value, 1);
}

TEST(SessionDiff, NoiseOnlyIsNoChange) {
  TrainingJobShape base, cand;
  cand.seed = 2;  // the same job, other jitter
  const SessionDiff d = Diff(base, cand, "diff-noise");
  EXPECT_EQ(d.ranks, 4u);
  EXPECT_EQ(d.base_steps, 39u);  // the first step is skipped
  EXPECT_EQ(d.cand_steps, 39u);
  EXPECT_TRUE(d.matched_by_number);
  EXPECT_FALSE(d.step_median.significant) << d.step_median.test.p_value;
  for (const RankDiff& r : d.per_rank) {
    EXPECT_FALSE(r.median.significant) << r.label;
  }
  for (const NamedChange& c : d.changes) {
    EXPECT_FALSE(c.figure.significant)
        << c.figure.name << " p=" << c.figure.test.p_value;
  }
  EXPECT_TRUE(d.appeared.empty());
  EXPECT_TRUE(d.vanished.empty());
  EXPECT_TRUE(d.recompiles.new_misses.empty());
  EXPECT_EQ(d.recompiles.base_misses, d.recompiles.cand_misses);
  EXPECT_NE(DiffVerdict(d).find("no significant change"), std::string::npos)
      << DiffVerdict(d);
}

TEST(SessionDiff, OneOpSlowerOnOneRankIsFoundWithItsRank) {
  TrainingJobShape base, cand;
  cand.seed = 2;
  // conv2d 30 % slower on rank 2 only: that rank now arrives last at every
  // all-reduce, so the whole job's step gets slower by about 0.6 ms.
  cand.scale = [](int rank, int, const std::string& op) {
    return rank == 2 && op == "conv2d" ? 1.3 : 1.0;
  };
  const SessionDiff d = Diff(base, cand, "diff-op");
  ASSERT_EQ(d.per_rank.size(), 4u);
  EXPECT_TRUE(d.step_median.significant);
  EXPECT_GT(d.step_median.delta_ns(), 400'000);
  EXPECT_LT(d.step_median.delta_ns(), 800'000);
  EXPECT_NE(DiffVerdict(d).find("slower"), std::string::npos) << DiffVerdict(d);
  // Every rank's step moved; rank 2's own work is what changed.
  EXPECT_EQ(d.largest_rank, 2);
  EXPECT_NEAR(d.largest_rank_own_ns, 600'000, 60'000);
  const NamedChange* conv = FindChange(d, "op:conv2d");
  ASSERT_NE(conv, nullptr);
  EXPECT_TRUE(conv->figure.significant);
  EXPECT_GT(conv->figure.delta_ns(), 0);
  EXPECT_EQ(conv->rank, 2);
  // 30 % of 2 ms on one rank of four, per rank per step: about 150 µs.
  EXPECT_NEAR(conv->figure.delta_ns(), 150'000, 30'000);
  EXPECT_NEAR(conv->rank_delta_ns, 600'000, 60'000);
  // The largest |delta| is conv2d's own... or the wait it causes on the
  // other ranks; matmul and the loader did not change.
  const NamedChange* matmul = FindChange(d, "op:matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_FALSE(matmul->figure.significant);
  // The other ranks now wait for rank 2 in the all-reduce.
  bool wait_up = false;
  for (const DiffFigure& c : d.categories) {
    if (c.name == "category:collective_wait") {
      wait_up = c.significant && c.delta_ns() > 0;
    }
  }
  EXPECT_TRUE(wait_up);
  EXPECT_TRUE(d.recompiles.new_misses.empty());
}

TEST(SessionDiff, ANewRecompileIsNamed) {
  TrainingJobShape base, cand;
  cand.seed = 2;
  cand.recompile_at = 20;
  const SessionDiff d = Diff(base, cand, "diff-recompile");
  EXPECT_EQ(d.recompiles.base_misses, 4u);  // step 0 on each rank
  EXPECT_EQ(d.recompiles.cand_misses, 8u);
  EXPECT_EQ(d.recompiles.cand_late, 4u);
  ASSERT_EQ(d.recompiles.new_misses.size(), 4u);
  EXPECT_EQ(d.recompiles.new_misses[0], "rank 0 step 20: f32[17,784] (late)");
  // One slow step of 39 moves no median.
  EXPECT_FALSE(d.step_median.significant);
}

TEST(SessionDiff, AFasterJobIsFaster) {
  TrainingJobShape base, cand;
  cand.seed = 3;
  cand.scale = [](int, int, const std::string& op) {
    return op == "matmul" ? 0.5 : 1.0;
  };
  const SessionDiff d = Diff(base, cand, "diff-faster");
  EXPECT_TRUE(d.step_median.significant);
  EXPECT_LT(d.step_median.delta_ns(), -300'000);
  EXPECT_LT(d.step_median.test.effect, -0.9);
  const NamedChange* matmul = FindChange(d, "op:matmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_TRUE(matmul->figure.significant);
  EXPECT_NEAR(matmul->figure.change(), -0.5, 0.05);
}

TEST(SessionDiff, ASlowerLoaderIsDataLoading) {
  TrainingJobShape base, cand;
  cand.seed = 2;
  cand.scale = [](int, int, const std::string& op) {
    return op == "loader_next" ? 3.0 : 1.0;
  };
  const SessionDiff d = Diff(base, cand, "diff-loader");
  const NamedChange* loader = FindChange(d, "scope:loader_next");
  ASSERT_NE(loader, nullptr);
  EXPECT_TRUE(loader->figure.significant);
  EXPECT_NEAR(loader->figure.change(), 2.0, 0.2);
  bool loading_up = false;
  for (const DiffFigure& c : d.categories) {
    if (c.name == "category:data_loading") {
      loading_up = c.significant && c.change() > 1.5;
    }
  }
  EXPECT_TRUE(loading_up);
}

TEST(SessionDiff, NamesInOneSessionOnlyAreListed) {
  TrainingJobShape base, cand;
  base.extra_scope = "tokenize";
  cand.seed = 2;
  cand.extra_scope = "augment";
  const SessionDiff d = Diff(base, cand, "diff-names");
  ASSERT_EQ(d.appeared.size(), 1u);
  EXPECT_EQ(d.appeared[0].figure.name, "scope:augment");
  EXPECT_NEAR(d.appeared[0].figure.cand_ns, 100'000, 1);
  EXPECT_EQ(d.appeared[0].cand_count, 4u * 39u);
  ASSERT_EQ(d.vanished.size(), 1u);
  EXPECT_EQ(d.vanished[0].figure.name, "scope:tokenize");
  EXPECT_EQ(FindChange(d, "scope:tokenize"), nullptr);
}

TEST(DiffGate, ParsesAndJudges) {
  SessionDiff d;
  d.step_median.name = "step_ms.median";
  d.step_median.base_ns = 10e6;
  d.step_median.cand_ns = 10.7e6;  // +7 %
  d.step_median.test.p_value = 0.004;
  d.recompiles.base_misses = 1;
  d.recompiles.cand_misses = 2;
  d.recompiles.new_misses = {"rank 0 step 9: x"};
  double seen = 0;
  auto holds = [&](const std::string& text) {
    auto g = tools::ParseDiffGate(text);
    EXPECT_TRUE(g.ok()) << text << ": " << g.status();
    auto h = tools::GateHolds(*g, d, &seen);
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() && *h;
  };
  EXPECT_TRUE(holds("step_ms.median > +5%"));
  EXPECT_NEAR(seen, 0.07, 1e-9);
  EXPECT_FALSE(holds("step_ms.median > +10%"));
  EXPECT_TRUE(holds("step_ms.median > 500us"));
  EXPECT_NEAR(seen, 700'000, 1e-3);
  EXPECT_FALSE(holds("step_ms.median > +1ms"));
  EXPECT_TRUE(holds("step_ms.median >= 5% and p<0.01"));
  EXPECT_FALSE(holds("step_ms.median > 5% p<0.001"));
  EXPECT_TRUE(holds("step_ms.median < -1% ") == false);
  EXPECT_TRUE(holds("recompiles.new > 0"));
  EXPECT_TRUE(holds("recompiles.misses >= 1"));
  EXPECT_FALSE(holds("recompiles.misses > 1"));

  for (const char* bad :
       {"step_ms.median", "step_ms.median > 5", "> 5%", "step_ms.median > x%",
        "step_ms.median > 5% and p<2", "recompiles.new > 1ms"}) {
    EXPECT_FALSE(tools::ParseDiffGate(bad).ok()) << bad;
  }
  auto unknown = tools::ParseDiffGate("op:nothing > 5%");
  ASSERT_TRUE(unknown.ok());
  auto h = tools::GateHolds(*unknown, d, &seen);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("no figure 'op:nothing'"),
            std::string::npos)
      << h.status();
}

}  // namespace
}  // namespace podscope::viewer
