// Statistics, search, flame graphs and step tables against brute force.
#include "podscope/viewer/analysis.h"

#include <algorithm>
#include <map>
#include <random>

#include "gtest/gtest.h"
#include "trace_gen.h"

namespace podscope::viewer {
namespace {

using testing::FileSpec;
using testing::TrackSpec;
using trace_format::Slice;

// Self time by definition: duration minus the union of the intervals of
// the slices whose parent (the last earlier slice one level up) it is.
std::vector<int64_t> NaiveSelfTimes(const std::vector<Slice>& s) {
  std::vector<int64_t> self(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    std::vector<std::pair<int64_t, int64_t>> children;
    for (size_t j = i + 1; j < s.size() && s[j].depth > s[i].depth; ++j) {
      if (s[j].depth == s[i].depth + 1) {
        children.push_back({s[j].start_ns, s[j].end_ns()});
      }
    }
    std::sort(children.begin(), children.end());
    int64_t covered = 0, until = INT64_MIN;
    for (auto [a, b] : children) {
      a = std::max(a, until);
      if (b > a) {
        covered += b - a;
        until = b;
      }
    }
    self[i] = s[i].duration_ns - covered;
  }
  return self;
}

struct Capture {
  std::string dir;
  std::vector<FileSpec> files;
};

Capture MakeCapture(uint64_t seed) {
  Capture c;
  c.dir = testing::TempDir("analysis" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int f = 0; f < 3; ++f) {
    FileSpec spec;
    spec.host = f < 2 ? "alpha" : "beta";
    spec.pid = 10 + f;
    spec.process_index = f;
    spec.strings = {"train_step", "forward",    "Backward",
                    "matmul",     "step_inner", "load"};
    spec.stacks = {
        {"leaf_a", "mid", "main"}, {"leaf_b", "mid", "main"}, {"main"}};
    spec.chunk_events = 700;
    for (int t = 0; t < 2; ++t) {
      TrackSpec track;
      track.name = "t" + std::to_string(t);
      track.slices = testing::RandomNestedSlices(rng, 600, 100'000'000, 6);
      for (int i = 0; i < 200; ++i) {
        track.samples.push_back(
            {static_cast<int64_t>(rng() % 100'000'000), uint32_t(rng() % 3)});
      }
      std::sort(track.samples.begin(), track.samples.end());
      track.instants = {{5, 1}, {50'000'000, 6}};
      spec.tracks.push_back(std::move(track));
    }
    EXPECT_TRUE(testing::WriteFile(c.dir + "/" + spec.host + "." +
                                       std::to_string(spec.pid) + ".podtrace",
                                   spec)
                    .ok());
    c.files.push_back(std::move(spec));
  }
  return c;
}

TEST(AnalysisTest, RangeStatsMatchBruteForce) {
  for (uint64_t seed : {1, 2, 3}) {
    const Capture cap = MakeCapture(seed);
    auto store_or = TraceStore::Open(cap.dir);
    ASSERT_TRUE(store_or.ok()) << store_or.status();
    const TraceStore& store = **store_or;
    std::mt19937_64 rng(seed * 31);
    for (int w = 0; w < 8; ++w) {
      int64_t t0 = static_cast<int64_t>(rng() % 100'000'000);
      int64_t t1 =
          t0 + static_cast<int64_t>(rng() % 100'000'000) / (1 << (rng() % 8));
      if (w == 0) t0 = kBeginningOfTime, t1 = kEndOfTime;
      // 0: per name; 1: per (name, host); 2: per (name, host, process).
      for (int split : {0, 1, 2}) {
        const bool by_host = split >= 1;
        std::map<std::pair<std::string, std::string>, NameStats> want;
        for (const FileSpec& f : cap.files) {
          for (const TrackSpec& t : f.tracks) {
            const std::vector<int64_t> self = NaiveSelfTimes(t.slices);
            for (size_t i = 0; i < t.slices.size(); ++i) {
              const Slice& s = t.slices[i];
              const int64_t covered_end = std::max(s.end_ns(), s.start_ns + 1);
              if (!(s.start_ns < t1 && covered_end > t0)) continue;
              const std::string where =
                  split == 2 ? f.host + "/" + std::to_string(f.pid)
                  : by_host  ? f.host
                             : std::string();
              NameStats& st = want[{f.strings[s.name - 1], where}];
              st.min_ns = st.count == 0 ? s.duration_ns
                                        : std::min(st.min_ns, s.duration_ns);
              st.max_ns = std::max(st.max_ns, s.duration_ns);
              ++st.count;
              st.total_ns += s.duration_ns;
              st.self_ns += self[i];
            }
          }
        }
        StatsOptions options;
        options.by_host = split == 1;
        options.by_process = split == 2;
        const auto got = RangeStats(store, t0, t1, options);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          if (i > 0) {
            EXPECT_GE(got[i - 1].total_ns, got[i].total_ns);
          }
          std::string host =
              by_host ? store.hosts()[got[i].host].name : std::string();
          if (split == 2) {
            ASSERT_LT(got[i].process, store.processes().size());
            host += "/" + std::to_string(store.processes()[got[i].process].pid);
          } else {
            EXPECT_EQ(got[i].process, kAllProcesses);
          }
          if (!by_host) {
            EXPECT_EQ(got[i].host, kAllHosts);
          }
          auto it = want.find({std::string(store.str(got[i].name)), host});
          ASSERT_NE(it, want.end());
          EXPECT_EQ(got[i].count, it->second.count);
          EXPECT_EQ(got[i].total_ns, it->second.total_ns);
          EXPECT_EQ(got[i].self_ns, it->second.self_ns);
          EXPECT_EQ(got[i].min_ns, it->second.min_ns);
          EXPECT_EQ(got[i].max_ns, it->second.max_ns);
        }
      }
    }
  }
}

TEST(AnalysisTest, SearchFindsMatchesInTimeOrderAndSteps) {
  const Capture cap = MakeCapture(4);
  auto store_or = TraceStore::Open(cap.dir);
  ASSERT_TRUE(store_or.ok());
  const TraceStore& store = **store_or;
  SearchQuery q;
  q.text = "BACKward";  // case-insensitive by default
  q.limit = 1'000'000;
  auto hits = Search(store, q);
  ASSERT_TRUE(hits.ok());
  size_t want = 0;
  for (const FileSpec& f : cap.files) {
    for (const TrackSpec& t : f.tracks) {
      for (const Slice& s : t.slices) want += s.name == 3;
    }
  }
  ASSERT_EQ(hits->size(), want);
  for (size_t i = 1; i < hits->size(); ++i) {
    EXPECT_LE((*hits)[i - 1].start_ns, (*hits)[i].start_ns);
    EXPECT_EQ(store.str((*hits)[i].name), "Backward");
  }
  // Stepping from hit to hit visits the same list, both ways.
  for (size_t i = 0; i + 1 < hits->size() && i < 50; ++i) {
    auto next = SearchStep(store, q, (*hits)[i].event, true);
    ASSERT_TRUE(next.ok() && next->has_value());
    EXPECT_EQ((**next).event, (*hits)[i + 1].event) << i;
    auto prev = SearchStep(store, q, (*hits)[i + 1].event, false);
    ASSERT_TRUE(prev.ok() && prev->has_value());
    EXPECT_EQ((**prev).event, (*hits)[i].event) << i;
  }
  auto after_last = SearchStep(store, q, hits->back().event, true);
  ASSERT_TRUE(after_last.ok());
  EXPECT_FALSE(after_last->has_value());

  q.limit = 5;
  auto first5 = Search(store, q);
  ASSERT_TRUE(first5.ok());
  ASSERT_EQ(first5->size(), 5u);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ((*first5)[i].event, (*hits)[i].event);

  q.case_sensitive = true;
  EXPECT_TRUE(Search(store, q)->empty());
  SearchQuery re;
  re.regex = true;
  re.text = "^(forward|load)$";
  re.t0 = 20'000'000;
  re.t1 = 60'000'000;
  auto rh = Search(store, re);
  ASSERT_TRUE(rh.ok());
  bool saw_instant = false;
  for (const SearchHit& h : *rh) {
    const auto name = store.str(h.name);
    EXPECT_TRUE(name == "forward" || name == "load");
    EXPECT_GE(h.start_ns, re.t0);
    EXPECT_LT(h.start_ns, re.t1);
    saw_instant |= h.event.kind == trace_format::EventKind::kInstant;
  }
  EXPECT_TRUE(saw_instant);  // the "load" instants at 50 ms
  re.text = "(unclosed";
  EXPECT_TRUE(absl::IsInvalidArgument(Search(store, re).status()));
}

TEST(AnalysisTest, FlameGraphTotalsEqualSampleCount) {
  const Capture cap = MakeCapture(5);
  auto store_or = TraceStore::Open(cap.dir);
  ASSERT_TRUE(store_or.ok());
  const TraceStore& store = **store_or;
  const int64_t t0 = 10'000'000, t1 = 70'000'000;
  uint64_t want = 0, want_a = 0;
  for (const FileSpec& f : cap.files) {
    for (const TrackSpec& t : f.tracks) {
      for (const auto& [ts, stack] : t.samples) {
        if (ts >= t0 && ts < t1) {
          ++want;
          want_a += stack == 0;
        }
      }
    }
  }
  const FlameGraph g = BuildFlameGraph(store, t0, t1);
  EXPECT_EQ(g.samples, want);
  EXPECT_EQ(g.nodes[0].total, want);
  // main is the only root frame; leaf_a is under main > mid.
  ASSERT_EQ(g.nodes[0].children.size(), 1u);
  const FlameNode& main = g.nodes[g.nodes[0].children[0]];
  EXPECT_EQ(store.str(main.name), "main");
  EXPECT_EQ(main.total, want);
  uint64_t sum_self = 0;
  for (const FlameNode& n : g.nodes) {
    sum_self += n.self;
    uint64_t children = 0;
    for (uint32_t c : n.children) children += g.nodes[c].total;
    EXPECT_EQ(n.total, n.self + children);
    if (store.str(n.name) == "leaf_a") {
      EXPECT_EQ(n.total, want_a);
    }
  }
  EXPECT_EQ(sum_self, want);
  // One track only.
  const FlameGraph one = BuildFlameGraph(store, t0, t1, {0});
  EXPECT_LT(one.samples, want);
}

TEST(AnalysisTest, StepTableListsOutermostStepsPerHost) {
  const std::string dir = testing::TempDir("steps");
  for (auto [host, base] :
       {std::pair<std::string, int64_t>{"a", 0}, {"b", 1000}}) {
    FileSpec f;
    f.host = host;
    f.strings = {"train_step", "optimizer_step", "other"};
    TrackSpec t;
    t.name = "main";
    // Three steps of 100, 120, 80 ns (+ base/10), each with an inner
    // "optimizer_step" that must not count as a step of its own.
    int64_t at = base;
    for (int64_t d : {100, 120, 80}) {
      d += base / 10;
      t.slices.push_back({at, d, 1, 0});
      t.slices.push_back({at + 1, d / 2, 2, 1});
      t.slices.push_back({at + d + 1, 3, 3, 0});
      at += d + 10;
    }
    f.tracks.push_back(t);
    ASSERT_TRUE(testing::WriteFile(dir + "/" + host + ".1.podtrace", f).ok());
  }
  auto store_or = TraceStore::Open(dir);
  ASSERT_TRUE(store_or.ok());
  const auto table = StepTable(**store_or);
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table[0].host_name, "a");
  EXPECT_EQ(table[0].count, 3u);
  EXPECT_EQ(table[0].min_ns, 80);
  EXPECT_EQ(table[0].max_ns, 120);
  EXPECT_EQ(table[0].mean_ns(), 100);
  ASSERT_EQ(table[0].steps.size(), 3u);
  EXPECT_EQ(table[0].steps[1].duration_ns, 120);
  EXPECT_EQ((*store_or)->str(table[0].steps[0].name), "train_step");
  EXPECT_EQ(table[1].host_name, "b");
  EXPECT_EQ(table[1].mean_ns(), 200);
  // Custom markers.
  StepOptions opt;
  opt.markers = {"OPTIMIZER"};
  const auto inner = StepTable(**store_or, opt);
  ASSERT_EQ(inner.size(), 2u);
  EXPECT_EQ(inner[0].count, 3u);
  EXPECT_EQ(inner[0].max_ns, 60);
}

}  // namespace
}  // namespace podscope::viewer
