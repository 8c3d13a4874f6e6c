// The step breakdown's host and data-loading time on random nested thread
// slices, against a brute-force classification of every microsecond.
#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pod_trace.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {
namespace {

using analysis_testing::RankTrace;

constexpr int64_t kUs = 1000;

struct Written {
  int64_t start, end;  // in µs
  bool loading;        // on a loader thread, loader-named, or under one
  bool step;           // a step slice
};

// Host work leaves out the steps and any slice, on any thread, that holds
// a whole step.
bool HoldsAStep(const Written& w, const std::vector<Written>& steps) {
  for (const Written& s : steps) {
    if (w.start <= s.start && s.end <= w.end) return true;
  }
  return false;
}

// Random call trees in [start, end) µs: children one after another (some
// touching), some named as data loading.
void Tree(RankTrace* t, uint32_t track, int64_t start, int64_t end, int depth,
          bool under_loader, std::mt19937* rng, std::vector<Written>* out) {
  if (depth > 5 || end - start < 2) return;
  std::uniform_int_distribution<int> children(0, 4);
  std::uniform_int_distribution<int> coin(0, 99);
  int64_t at = start;
  for (int n = children(*rng); n > 0 && at < end; --n) {
    const int64_t gap = coin(*rng) < 40 ? 0 : (end - at) / 8;
    const int64_t s = std::min(at + gap, end - 1);
    const int64_t e =
        s + 1 +
        std::uniform_int_distribution<int64_t>(0, (end - s - 1) / 2)(*rng);
    const bool loader = coin(*rng) < 10;
    t->Slice(track, s * kUs, (e - s) * kUs,
             loader ? "data_loader_next" : "op" + std::to_string(depth));
    out->push_back({s, e, under_loader || loader, false});
    Tree(t, track, s, e, depth + 1, under_loader || loader, rng, out);
    at = e;
  }
}

void CheckAgainstBruteForce(uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  const std::string dir =
      analysis_testing::FreshDir("step_categories_" + std::to_string(seed));
  constexpr int kSteps = 6;
  constexpr int64_t kStepUs = 800, kPeriodUs = 1000;
  std::vector<Written> host_side, loader_side, steps;
  {
    auto t = RankTrace::Create(dir + "/rank0.podtrace", "host0", 0, 1);
    ASSERT_TRUE(t.ok()) << t.status();
    RankTrace& r = **t;
    const uint32_t main = r.Thread("main");
    const uint32_t worker = r.Thread("worker");
    const uint32_t loader = r.Thread("loader 0");
    std::mt19937 rng(seed);
    // A slice around every step: it encloses steps, so it is not host.
    r.Slice(main, 0, kSteps * kPeriodUs * kUs, "main");
    host_side.push_back({0, kSteps * kPeriodUs, false, true});
    for (int k = 0; k < kSteps; ++k) {
      const int64_t s = k * kPeriodUs + 50;
      r.Slice(main, s * kUs, kStepUs * kUs, "train_step",
              {{"step", int64_t{k}}});
      host_side.push_back({s, s + kStepUs, false, true});
      steps.push_back(host_side.back());
      Tree(&r, main, s, s + kStepUs, 2, false, &rng, &host_side);
    }
    Tree(&r, worker, 0, kSteps * kPeriodUs, 0, false, &rng, &host_side);
    Tree(&r, loader, 0, kSteps * kPeriodUs, 0, true, &rng, &loader_side);
    ASSERT_TRUE(r.Close().ok());
  }
  auto store = TraceStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  const StepBreakdown b = AnalyzeSteps(**store);
  ASSERT_EQ(b.rows.size(), static_cast<size_t>(kSteps));

  // Every microsecond: loading when a loading slice covers it, else host
  // when any other slice that is not a step (nor holds one) does.
  const int64_t span = kSteps * kPeriodUs;
  std::vector<uint8_t> loading(span, 0), host(span, 0);
  auto mark = [](std::vector<uint8_t>* v, const Written& w) {
    std::fill(v->begin() + w.start, v->begin() + w.end, 1);
  };
  for (const Written& w : loader_side) mark(&loading, w);
  for (const Written& w : host_side) {
    if (w.loading) {
      mark(&loading, w);
    } else if (!w.step && !HoldsAStep(w, steps)) {
      mark(&host, w);
    }
  }
  int64_t host_total = 0, loading_total = 0;
  for (int k = 0; k < kSteps; ++k) {
    const StepCell& c = b.rows[k].ranks[0];
    ASSERT_TRUE(c.present);
    int64_t want_loading = 0, want_host = 0;
    for (int64_t us = c.start_ns / kUs; us < (c.start_ns + c.duration_ns) / kUs;
         ++us) {
      want_loading += loading[us];
      want_host += !loading[us] && host[us];
    }
    EXPECT_EQ(c.category(StepCategory::kDataLoading), want_loading * kUs)
        << "step " << k;
    EXPECT_EQ(c.category(StepCategory::kHost), want_host * kUs) << "step " << k;
    host_total += want_host;
    loading_total += want_loading;
  }
  // The trace exercises both categories.
  EXPECT_GT(host_total, 0);
  EXPECT_GT(loading_total, 0);
}

TEST(StepCategoriesTest, HostAndLoadingTimeMatchBruteForce) {
  for (uint32_t seed = 1; seed <= 8; ++seed) CheckAgainstBruteForce(seed);
}

}  // namespace
}  // namespace podscope::viewer
