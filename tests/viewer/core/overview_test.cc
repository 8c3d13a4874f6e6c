// A session of more files than OpenOptions::detail_files opens as an
// overview: every host with its busy profile and steps and no events, each
// host's events loaded on request. Checked against brute force on files
// with a known shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "podscope/trace_format/reader.h"
#include "podscope/viewer/trace_store.h"
#include "trace_gen.h"

namespace podscope::viewer {
namespace {

namespace tf = trace_format;
using testing::FileSpec;
using testing::TrackSpec;

constexpr int kHosts = 20;
constexpr int64_t kStep = 1'000'000;  // 1 ms steps
constexpr int kSteps = 40;

// Host h: a "main" thread whose "train_step" (with a "forward" inside)
// fills the first (h % 5 + 1) * 10 % of every millisecond, and an "io"
// thread busy for 5 % of each millisecond from its middle, when main is
// idle. The busiest track of each moment is thus busy
// (h % 5 + 1) * 10 % + 5 % of the time.
FileSpec HostFile(int h) {
  FileSpec f;
  f.host = "host" + std::to_string(100 + h);
  f.pid = 1000 + h;
  f.process_index = h;
  f.process_count = kHosts;
  f.strings = {"train_step", "forward", "io"};
  TrackSpec main;
  main.name = "main";
  TrackSpec io;
  io.name = "io";
  io.sort_index = 1;
  const int64_t busy = kStep * ((h % 5) + 1) / 10;
  for (int s = 0; s < kSteps; ++s) {
    const int64_t t = int64_t{s} * kStep;
    // The step covers only its work, so the thread is busy `busy` of each
    // millisecond.
    main.slices.push_back({t, busy, 1});
    main.slices.push_back({t, busy / 2, 2});
    io.slices.push_back({t + kStep / 2, kStep / 20, 3});
  }
  f.tracks = {main, io};
  return f;
}

TEST(Overview, BigSessionOpensAsOneSummaryPerHostAndLoadsHostsOnRequest) {
  const std::string dir = testing::TempDir("overview");
  uint64_t total = 0;
  std::vector<uint64_t> events(kHosts);
  for (int h = 0; h < kHosts; ++h) {
    const FileSpec f = HostFile(h);
    for (const TrackSpec& t : f.tracks) events[h] += t.slices.size();
    total += events[h];
    ASSERT_TRUE(testing::WriteFile(
                    dir + "/host" + std::to_string(100 + h) + ".podtrace", f)
                    .ok());
  }
  OpenOptions options;
  options.detail_files = kHosts - 1;
  auto opened = TraceStore::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  TraceStore& store = **opened;
  ASSERT_TRUE(store.is_overview());
  ASSERT_EQ(store.hosts().size(), static_cast<size_t>(kHosts));
  ASSERT_EQ(store.processes().size(), static_cast<size_t>(kHosts));
  EXPECT_TRUE(store.tracks().empty());
  EXPECT_EQ(store.event_count(), 0u);
  EXPECT_EQ(store.session_event_count(), total);
  EXPECT_EQ(store.first_ns(), 0);
  // Only the overviews are in memory: a few KiB per host.
  EXPECT_LE(store.resident_bytes(), size_t{kHosts} * 8192);
  EXPECT_GE(store.last_ns(), int64_t{kSteps - 1} * kStep);

  for (const ProcessInfo& p : store.processes()) {
    ASSERT_FALSE(p.detail);
    ASSERT_NE(p.overview, nullptr);
    const int h = p.process_index;
    EXPECT_EQ(p.host_name, "host" + std::to_string(100 + h));
    EXPECT_EQ(p.events, events[h]);
    // Every step, where it is.
    ASSERT_EQ(p.overview->steps.size(), static_cast<size_t>(kSteps));
    const int64_t busy = kStep * ((h % 5) + 1) / 10;
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_EQ(p.overview->steps[s].first, int64_t{s} * kStep);
      EXPECT_EQ(p.overview->steps[s].second, int64_t{s} * kStep + busy);
    }
    // Over whole steps: main's share plus io's, which never overlap.
    const double expected = static_cast<double>(busy) / kStep + 0.05;
    EXPECT_NEAR(p.overview->BusyIn(0, 30 * kStep), expected, 0.01)
        << "host " << h;
    // Inside a step's work (away from its edges by more than a bin,
    // about 10 us here) something is always busy, and between the work
    // and io nothing is.
    const int64_t s5 = 5 * kStep;
    EXPECT_FLOAT_EQ(p.overview->BusyIn(s5 + busy / 4, s5 + 3 * busy / 4), 1.0f);
    EXPECT_FLOAT_EQ(
        p.overview->BusyIn(s5 + kStep / 2 + 12'500, s5 + kStep / 2 + 37'500),
        1.0f);
    EXPECT_EQ(p.overview->BusyIn(s5 + busy + 20'000, s5 + kStep / 2 - 20'000),
              0.0f);
    // Nothing outside the process's time.
    EXPECT_EQ(p.overview->BusyIn(-5 * kStep, -kStep), 0.0f);
  }

  // One host on request: its tracks and events, the rest unchanged.
  const ProcessId seven = [&] {
    for (const ProcessInfo& p : store.processes()) {
      if (p.process_index == 7) return p.id;
    }
    return ProcessId{0};
  }();
  ASSERT_TRUE(store.LoadDetail({seven}).ok());
  EXPECT_TRUE(store.processes()[seven].detail);
  EXPECT_EQ(store.processes()[seven].tracks.size(), 2u);
  EXPECT_EQ(store.event_count(), events[7]);
  EXPECT_EQ(store.processes()[seven].events, events[7]);
  EXPECT_EQ(store.session_event_count(), total);
  for (const ProcessInfo& p : store.processes()) {
    if (p.id != seven) {
      EXPECT_FALSE(p.detail);
    }
  }
  const TrackData& main = store.data(store.processes()[seven].tracks[0]);
  EXPECT_EQ(main.slices.size(), 2u * kSteps);
  EXPECT_EQ(store.str(main.slices.name(0)), "train_step");
  EXPECT_TRUE(store.FindString("forward").has_value());
  // Asking again loads nothing more.
  ASSERT_TRUE(store.LoadDetail({seven}).ok());
  EXPECT_EQ(store.event_count(), events[7]);

  // Few files load in full, as before.
  OpenOptions all;
  all.detail_files = kHosts;
  auto full = TraceStore::Open(dir, all);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE((*full)->is_overview());
  EXPECT_EQ((*full)->event_count(), total);
  for (const ProcessInfo& p : (*full)->processes()) {
    EXPECT_TRUE(p.detail);
    EXPECT_EQ(p.overview, nullptr);
  }
}

TEST(Overview, FromTheIndexWithoutReadingAnEventThenExact) {
  const std::string dir = testing::TempDir("overview_index");
  uint64_t total = 0;
  for (int h = 0; h < kHosts; ++h) {
    FileSpec f = HostFile(h);
    f.chunk_events = 12;  // a chunk every few steps
    for (const TrackSpec& t : f.tracks) total += t.slices.size();
    ASSERT_TRUE(testing::WriteFile(
                    dir + "/host" + std::to_string(100 + h) + ".podtrace", f)
                    .ok());
  }
  // Damage inside host100's first chunk: only decoding it would notice.
  const std::string damaged = dir + "/host100.podtrace";
  {
    auto reader = tf::TraceReader::Open(damaged);
    ASSERT_TRUE(reader.ok());
    const tf::ChunkInfo& c = (*reader)->chunks().at(0);
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(c.offset + c.length / 2));
    file.put('\x5a');
    file.seekp(static_cast<std::streamoff>(c.offset + c.length / 2 + 1));
    file.put('\xa5');
  }
  OpenOptions options;
  options.detail_files = kHosts - 1;
  options.overview_from_index = true;
  auto opened = TraceStore::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  TraceStore& store = **opened;
  ASSERT_TRUE(store.is_overview());
  EXPECT_TRUE(store.problems().empty());
  EXPECT_EQ(store.session_event_count(), total);
  EXPECT_EQ(store.first_ns(), 0);
  EXPECT_GE(store.last_ns(), int64_t{kSteps - 1} * kStep);
  for (const ProcessInfo& p : store.processes()) {
    ASSERT_NE(p.overview, nullptr);
    EXPECT_FALSE(p.overview->exact);
    EXPECT_TRUE(p.overview->steps.empty());
    // Its chunks span the whole capture: somewhere busy, nothing outside.
    EXPECT_GT(p.overview->BusyIn(0, kSteps * kStep), 0.0f);
    EXPECT_EQ(p.overview->BusyIn(-5 * kStep, -kStep), 0.0f);
  }

  // The exact rows, as an exact open makes them, replace those.
  OpenOptions exact_options;
  exact_options.detail_files = kHosts - 1;
  auto exact = TraceStore::Open(dir, exact_options);
  ASSERT_TRUE(exact.ok());
  ASSERT_EQ((*exact)->problems().size(), 1u);
  EXPECT_EQ((*exact)->problems()[0].path, damaged);
  std::vector<std::pair<ProcessId, std::shared_ptr<const ProcessOverview>>>
      refined;
  for (const ProcessInfo& p : store.processes()) {
    auto o = SummarizeProcessFile(p.path, /*align_clocks=*/true);
    ASSERT_TRUE(o.ok()) << o.status();
    const ProcessOverview& want = *(*exact)->processes()[p.id].overview;
    EXPECT_TRUE((*o)->exact);
    EXPECT_EQ((*o)->busy, want.busy);
    EXPECT_EQ((*o)->steps, want.steps);
    refined.emplace_back(p.id, *o);
  }
  store.SetOverviews(refined);
  for (const ProcessInfo& p : store.processes()) {
    EXPECT_TRUE(p.overview->exact);
    if (p.path != damaged) {
      EXPECT_EQ(p.overview->steps.size(), static_cast<size_t>(kSteps));
    }
  }
  EXPECT_EQ(store.first_ns(), (*exact)->first_ns());
  EXPECT_EQ(store.last_ns(), (*exact)->last_ns());
}

TEST(Overview, AFileThatCannotBeReadIsAProblemAndTheOthersOpen) {
  const std::string dir = testing::TempDir("overview_bad");
  for (int h = 0; h < 4; ++h) {
    ASSERT_TRUE(testing::WriteFile(dir + "/h" + std::to_string(h) + ".podtrace",
                                   HostFile(h))
                    .ok());
  }
  {
    FILE* f = std::fopen((dir + "/junk.podtrace").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a trace", f);
    std::fclose(f);
  }
  OpenOptions options;
  options.detail_files = 2;
  auto opened = TraceStore::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_TRUE((*opened)->is_overview());
  EXPECT_EQ((*opened)->processes().size(), 4u);
  ASSERT_EQ((*opened)->problems().size(), 1u);
  EXPECT_NE((*opened)->problems()[0].path.find("junk"), std::string::npos);
  EXPECT_FALSE((*opened)->problems()[0].loaded);
}

}  // namespace
}  // namespace podscope::viewer
