// The timeline's view-model without a window: time <-> pixel mapping, zoom
// and pan, ruler ticks, the track layout and hit testing against
// viewer/core's level-of-detail query, time parsing and the command line.
#include <QtTest>
#include <random>
#include <set>

#include "cli_options.h"
#include "details_panel.h"
#include "hit_test.h"
#include "name_colors.h"
#include "podscope/viewer/lod.h"
#include "time_axis.h"
#include "time_format.h"
#include "trace_gen.h"
#include "track_layout.h"

namespace podscope::viewer::app {

class ViewModelTest : public QObject {
  Q_OBJECT

 private slots:
  void AxisMapsTimesToPixelsAndBack();
  void ZoomKeepsTheTimeUnderTheCursor();
  void PanMovesByPixelsAndStopsAtTheMargins();
  void RulerPicksReadableSteps();
  void FormatsAndParsesTimes();
  void CommandLine();
  void LayoutGroupsHostsProcessesTracks();
  void LayoutFitsTheFirstScreen();
  void HitTestFindsWhatTheLodQueryDraws();
  void LongTextGetsBreakOpportunities();
  void EnclosingSlicesAreTheNesting();
  void NameColorsAreStable();
};

void ViewModelTest::AxisMapsTimesToPixelsAndBack() {
  TimeAxis a;
  a.SetWidth(1000);
  a.SetBounds(1000, 1'001'000);
  // The whole trace plus 5% margins.
  QCOMPARE(a.t0(), int64_t{1000 - 50'000});
  QCOMPARE(a.t1(), int64_t{1'001'000 + 50'000});
  a.SetWindow(1000, 101'000);
  QCOMPARE(a.span(), int64_t{100'000});
  QCOMPARE(a.TimeToX(1000), 0.0);
  QCOMPARE(a.TimeToX(51'000), 500.0);
  QCOMPARE(a.XToTime(500), int64_t{51'000});
  QCOMPARE(a.XToTime(0.5), int64_t{1050});
  QCOMPARE(a.NsPerPixel(), 100.0);
  // Never narrower than the minimum span.
  a.SetWindow(5000, 5001);
  QCOMPARE(a.span(), TimeAxis::kMinSpanNs);
}

void ViewModelTest::ZoomKeepsTheTimeUnderTheCursor() {
  TimeAxis a;
  a.SetWidth(800);
  a.SetBounds(0, 8'000'000);
  a.SetWindow(0, 8'000'000);
  const int64_t under = a.XToTime(200);
  a.ZoomAround(200, 2.0);
  QCOMPARE(a.span(), int64_t{4'000'000});
  QVERIFY(std::llabs(a.XToTime(200) - under) <= 1);
  a.ZoomAround(200, 0.5);
  QCOMPARE(a.span(), int64_t{8'000'000});
  // Zooming far out stops at the whole trace with margins.
  for (int i = 0; i < 20; ++i) a.ZoomAround(400, 0.5);
  QCOMPARE(a.t0(), int64_t{-400'000});
  QCOMPARE(a.t1(), int64_t{8'400'000});
  // Far in stops at the minimum span.
  for (int i = 0; i < 100; ++i) a.ZoomAround(400, 2.0);
  QCOMPARE(a.span(), TimeAxis::kMinSpanNs);
}

void ViewModelTest::PanMovesByPixelsAndStopsAtTheMargins() {
  TimeAxis a;
  a.SetWidth(1000);
  a.SetBounds(0, 1'000'000);
  a.SetWindow(400'000, 500'000);
  a.PanPixels(-100);  // drag left: later times
  QCOMPARE(a.t0(), int64_t{410'000});
  QCOMPARE(a.span(), int64_t{100'000});
  a.PanPixels(100'000);
  QCOMPARE(a.t0(), int64_t{-50'000});
  QCOMPARE(a.span(), int64_t{100'000});
  a.PanPixels(-100'000);
  QCOMPARE(a.t1(), int64_t{1'050'000});
  a.CenterOn(300'000);
  QCOMPARE(a.t0(), int64_t{250'000});
}

void ViewModelTest::RulerPicksReadableSteps() {
  TimeAxis a;
  a.SetWidth(1000);
  a.SetBounds(0, 10'000'000'000);
  a.SetWindow(0, 10'000'000);  // 10 ms over 1000 px: 10 us a pixel
  Ruler r = ChooseRuler(a, 0, 100);
  QCOMPARE(r.step_ns, int64_t{1'000'000});
  QCOMPARE(QString::fromStdString(r.unit), QString("ms"));
  QCOMPARE(r.ticks.size(), size_t{11});
  QCOMPARE(QString::fromStdString(r.ticks[3].label), QString("3 ms"));
  QCOMPARE(r.ticks[3].x, 300.0);
  // Ticks at least the spacing apart, and no more than 2.5 times it.
  for (int64_t span :
       {int64_t{37}, int64_t{1234}, int64_t{987'654}, int64_t{3'000'000'000}}) {
    a.SetWindow(5'000'000'000, 5'000'000'000 + span);
    r = ChooseRuler(a, 0, 100);
    const double px = r.step_ns / a.NsPerPixel();
    QVERIFY2(px >= 100 - 1e-9 && px <= 250, qPrintable(QString::number(px)));
  }
  // Deep in the trace the labels keep the seconds and show the step.
  a.SetWindow(5'000'000'000, 5'000'001'000);
  r = ChooseRuler(a, 0, 100);
  QCOMPARE(r.step_ns, int64_t{100});
  QCOMPARE(QString::fromStdString(r.unit), QString("s"));
  QCOMPARE(QString::fromStdString(r.ticks[1].label), QString("5.0000001 s"));
  // Microseconds with a fraction.
  a.SetWindow(0, 5'000);
  r = ChooseRuler(a, 0, 100);
  QCOMPARE(r.step_ns, int64_t{500});
  QCOMPARE(QString::fromStdString(r.ticks[3].label), QString("1.5 µs"));
}

void ViewModelTest::FormatsAndParsesTimes() {
  QCOMPARE(QString::fromStdString(FormatValue(4.96505e8, "bytes")),
           QString("474 MiB"));
  QCOMPARE(QString::fromStdString(FormatValue(512, "bytes")), QString("512 B"));
  QCOMPARE(QString::fromStdString(FormatValue(1536, "bytes")),
           QString("1.50 KiB"));
  QCOMPARE(QString::fromStdString(FormatValue(6.33811e8, "ns")),
           QString("634 ms"));
  QCOMPARE(QString::fromStdString(FormatValue(202.48, "%")), QString("202 %"));
  QCOMPARE(QString::fromStdString(FormatValue(34, "count")),
           QString("34 count"));
  QCOMPARE(QString::fromStdString(FormatValue(1.25e6, "events")),
           QString("1.25M events"));
  QCOMPARE(QString::fromStdString(FormatValue(-3.5, "")), QString("-3.50"));
  QCOMPARE(QString::fromStdString(FormatValue(0, "")), QString("0"));
  QCOMPARE(QString::fromStdString(FormatDuration(0)), QString("0 ns"));
  QCOMPARE(QString::fromStdString(FormatDuration(950)), QString("950 ns"));
  QCOMPARE(QString::fromStdString(FormatDuration(1234)), QString("1.23 µs"));
  QCOMPARE(QString::fromStdString(FormatDuration(45'600'000)),
           QString("45.6 ms"));
  QCOMPARE(QString::fromStdString(FormatDuration(2'346'000'000)),
           QString("2.35 s"));
  QCOMPARE(QString::fromStdString(FormatDuration(999'999)), QString("1.00 ms"));
  std::string error;
  QCOMPARE(*ParseDuration("1.5ms", &error), int64_t{1'500'000});
  QCOMPARE(*ParseDuration("250 us", &error), int64_t{250'000});
  QCOMPARE(*ParseDuration("250µs", &error), int64_t{250'000});
  QCOMPARE(*ParseDuration("2s", &error), int64_t{2'000'000'000});
  QCOMPARE(*ParseDuration("17ns", &error), int64_t{17});
  QCOMPARE(*ParseDuration("0", &error), int64_t{0});
  QVERIFY(!ParseDuration("5", &error));
  QVERIFY(error.find("needs a unit") != std::string::npos);
  QVERIFY(!ParseDuration("5 min", &error));
  QVERIFY(error.find("unknown unit") != std::string::npos);
  QVERIFY(!ParseDuration("ms", &error));
  auto r = ParseRange("10ms:12.5ms", &error);
  QVERIFY(r && r->t0 && r->t1);
  QCOMPARE(*r->t0, int64_t{10'000'000});
  QCOMPARE(*r->t1, int64_t{12'500'000});
  r = ParseRange("2s:", &error);
  QVERIFY(r && r->t0 && !r->t1);
  QVERIFY(!ParseRange("3ms:1ms", &error));
  QVERIFY(!ParseRange("3ms", &error));
}

void ViewModelTest::CommandLine() {
  std::string error;
  auto o = ParseCommandLine({"--screenshot", "out.png", "--range", "1ms:2ms",
                             "--size", "800x600", "--verbose", "trace"},
                            &error);
  QVERIFY2(o.has_value(), error.c_str());
  QCOMPARE(QString::fromStdString(o->screenshot), QString("out.png"));
  QCOMPARE(QString::fromStdString(o->path), QString("trace"));
  QCOMPARE(o->width, 800);
  QCOMPARE(o->height, 600);
  QVERIFY(o->verbose);
  QCOMPARE(*o->range->t0, int64_t{1'000'000});
  o = ParseCommandLine({"--size=1024x768", "x"}, &error);
  QVERIFY(o && o->width == 1024);
  QVERIFY(!ParseCommandLine({"--bogus"}, &error));
  QVERIFY(error.find("--bogus") != std::string::npos);
  QVERIFY(!ParseCommandLine({"--size", "big", "x"}, &error));
  QVERIFY(error.find("--size") != std::string::npos);
  QVERIFY(!ParseCommandLine({"--range", "1:2", "x"}, &error));
  QVERIFY(error.find("--range") != std::string::npos);
  QVERIFY(!ParseCommandLine({"--screenshot", "out.png"}, &error));
  QVERIFY(!ParseCommandLine({"a", "b"}, &error));
  QVERIFY(!ParseCommandLine({"--range"}, &error));
  QVERIFY(error.find("needs a value") != std::string::npos);
}

namespace {

std::unique_ptr<TraceStore> TwoHostStore(std::string* dir_out) {
  const std::string dir = testing::TempDir("app_layout");
  std::mt19937_64 rng(7);
  for (int h = 0; h < 2; ++h) {
    testing::FileSpec spec;
    spec.host = h == 0 ? "alpha" : "beta";
    spec.pid = 10 + h;
    spec.strings = {"a", "b", "c", "d"};
    testing::TrackSpec t;
    t.name = "thread";
    t.slices = testing::RandomNestedSlices(rng, 3000, 10'000'000, 4);
    spec.tracks.push_back(t);
    testing::TrackSpec c;
    c.name = "counter";
    c.kind = trace_format::proto::TRACK_KIND_COUNTER;
    c.counters = {{0, 1.0}, {5'000'000, 3.0}};
    spec.tracks.push_back(c);
    testing::TrackSpec empty;
    empty.name = "idle";
    spec.tracks.push_back(empty);
    if (!testing::WriteFile(dir + "/" + spec.host + ".podtrace", spec).ok()) {
      return nullptr;
    }
  }
  *dir_out = dir;
  auto store = TraceStore::Open(dir);
  return store.ok() ? std::move(*store) : nullptr;
}

}  // namespace

void ViewModelTest::LayoutGroupsHostsProcessesTracks() {
  std::string dir;
  auto store = TwoHostStore(&dir);
  QVERIFY(store);
  TrackLayout layout;
  layout.Reset(store.get());
  // host, process, thread and the counters' row per host (two processes:
  // the counters start folded into it); the empty track is hidden.
  QCOMPARE(layout.rows().size(), size_t{8});
  QCOMPARE(layout.rows()[3].kind, RowKind::kCounters);
  QVERIFY(layout.rows()[3].collapsed);
  const TrackId counter = store->processes()[0].tracks[1];
  QCOMPARE(layout.RowOfTrack(counter), -1);
  QVERIFY(layout.ToggleRow(3));  // lists alpha's counter
  QCOMPARE(layout.rows().size(), size_t{9});
  QCOMPARE(layout.RowOfTrack(counter), 4);
  QCOMPARE(layout.rows()[0].kind, RowKind::kHost);
  QCOMPARE(layout.rows()[1].kind, RowKind::kProcess);
  QCOMPARE(layout.rows()[2].kind, RowKind::kTrack);
  const LayoutRow& thread = layout.rows()[2];
  QCOMPARE(thread.depths, store->data(thread.track).slices.depth_count());
  QCOMPARE(thread.height,
           2 * TrackLayout::kTrackPadding +
               static_cast<int>(thread.depths) * TrackLayout::kLaneHeight);
  QVERIFY(layout.rows()[4].counter_top >= 0);
  QVERIFY(layout.ToggleRow(3));  // folds it again
  // Rows tile the content.
  int y = 0;
  for (const LayoutRow& r : layout.rows()) {
    QCOMPARE(r.y, y);
    QCOMPARE(layout.RowAt(r.y), static_cast<int>(&r - &layout.rows()[0]));
    QCOMPARE(layout.RowAt(r.y + r.height - 1),
             static_cast<int>(&r - &layout.rows()[0]));
    y += r.height;
  }
  QCOMPARE(layout.total_height(), y);
  QCOMPARE(layout.RowAt(y), -1);
  // Lanes.
  const LaneHit lane = layout.LaneAt(
      thread, thread.y + thread.slice_top + 2 * TrackLayout::kLaneHeight + 3);
  QCOMPARE(lane.kind, LaneHit::kSlice);
  QCOMPARE(lane.depth, 2u);
  QCOMPARE(layout.LaneCenter(thread.track, 2),
           thread.y + thread.slice_top + 2 * TrackLayout::kLaneHeight +
               TrackLayout::kLaneHeight / 2);
  // Collapsing.
  const TrackId beta_thread = layout.rows()[6].track;
  QVERIFY(layout.ToggleRow(4));  // beta's host row
  QCOMPARE(layout.rows().size(), size_t{5});
  QCOMPARE(layout.RowOfTrack(beta_thread), -1);
  layout.Reveal(beta_thread);
  QVERIFY(layout.RowOfTrack(beta_thread) >= 0);
  QVERIFY(layout.ToggleRow(1));  // alpha's process row
  QCOMPARE(layout.rows().size(), size_t{6});
  QCOMPARE(layout.rows()[4].kind, RowKind::kTrack);
  QVERIFY(!layout.ToggleRow(4));  // a track row does not toggle
}

void ViewModelTest::LayoutFitsTheFirstScreen() {
  std::string dir;
  auto store = TwoHostStore(&dir);
  QVERIFY(store);
  TrackLayout layout;
  layout.Reset(store.get());
  const TrackId thread = store->processes()[0].tracks[0];
  const uint32_t levels = store->data(thread).slices.depth_count();
  QVERIFY(levels > 2);
  const int full = layout.total_height();
  // Room for everything: every level.
  QVERIFY(layout.FitFirstScreen(full));
  QCOMPARE(layout.rows()[layout.RowOfTrack(thread)].depths, levels);
  QVERIFY(!layout.compact());
  // Less room: fewer levels, and a click on the track shows them all.
  QVERIFY(layout.FitFirstScreen(full - 1));
  LayoutRow row = layout.rows()[layout.RowOfTrack(thread)];
  QVERIFY(row.depths < levels);
  QCOMPARE(row.all_depths, levels);
  QVERIFY(layout.total_height() <= full - 1);
  QVERIFY(layout.ToggleRow(layout.RowOfTrack(thread)));
  QCOMPARE(layout.rows()[layout.RowOfTrack(thread)].depths, levels);
  QVERIFY(layout.ToggleRow(layout.RowOfTrack(thread)));
  QCOMPARE(layout.rows()[layout.RowOfTrack(thread)].depths, row.depths);
  // One level at full height, names readable, before compact rows.
  layout.SetDepthLimit(1);
  const int one_level = layout.total_height();
  QVERIFY(layout.FitFirstScreen(one_level));
  QVERIFY(!layout.compact());
  QVERIFY(!layout.ranks_side_by_side());
  QCOMPARE(layout.rows()[layout.RowOfTrack(thread)].depths, 1u);
  // Less room: every rank's main thread (and device streams) at full
  // height, the other threads left out.
  layout.SetRanksSideBySide(true);
  const int side_one_level = layout.total_height();
  QVERIFY(side_one_level < one_level);
  QVERIFY(layout.FitFirstScreen(one_level - 1));
  QVERIFY(layout.ranks_side_by_side());
  QVERIFY(!layout.compact());
  QVERIFY(layout.total_height() <= one_level - 1);
  QVERIFY(layout.RowOfTrack(thread) >= 0);
  // Compact rows: short lanes, two levels.
  layout.SetRanksSideBySide(false);
  layout.SetDepthLimit(0);
  layout.SetCompact(true);
  row = layout.rows()[layout.RowOfTrack(thread)];
  QCOMPARE(row.lane_height, TrackLayout::kCompactLaneHeight);
  QCOMPARE(row.depths, static_cast<uint32_t>(TrackLayout::kCompactDepths));
  const int compact = layout.total_height();
  QVERIFY(compact < full);
  layout.SetRanksSideBySide(true);
  const int side_compact = layout.total_height();
  // Less room than the main threads take at full height: compact rows.
  QVERIFY(layout.FitFirstScreen(side_one_level - 1));
  QVERIFY(layout.compact());
  QVERIFY(layout.total_height() <= side_one_level - 1);
  QCOMPARE(layout.ranks_side_by_side(), compact > side_one_level - 1);
  QVERIFY(layout.FitFirstScreen(side_compact));
  QVERIFY(layout.compact());
  // No room at all: full-height rows of two levels, and it says so.
  QVERIFY(!layout.FitFirstScreen(10));
  QVERIFY(!layout.compact());
  QCOMPARE(layout.rows()[layout.RowOfTrack(thread)].depths, 2u);
}

void ViewModelTest::HitTestFindsWhatTheLodQueryDraws() {
  std::string dir;
  auto store = TwoHostStore(&dir);
  QVERIFY(store);
  const TrackId track = store->processes()[0].tracks[0];
  const SliceColumns& s = store->data(track).slices;
  const int64_t t0 = store->first_ns(), t1 = store->last_ns();
  for (uint32_t pixels : {97u, 400u, 1500u}) {
    const auto visible = QuerySlices(s, t0, t1, pixels);
    const PixelGrid grid(t0, t1, pixels);
    for (const VisibleSlice& v : visible) {
      // Hitting the middle of what is drawn returns a slice of that depth
      // touching that pixel.
      const int64_t end = v.start_ns + v.duration_ns;
      const int64_t mid = v.start_ns + v.duration_ns / 2;
      const uint32_t p = grid.PixelOf(std::clamp(mid, t0, t1 - 1));
      auto hit = HitSlice(*store, track, v.depth, t0, t1, pixels, p + 0.5, 0);
      QVERIFY(hit.has_value());
      QCOMPARE(DepthOf(*store, *hit), v.depth);
      const int64_t hs = s.start(hit->index);
      QVERIFY(hs < grid.Bound(p + 1));
      QVERIFY(s.covered_end(hit->index) > grid.Bound(p));
      // A slice at least a pixel wide is what its interior hits.
      if (!v.representative &&
          grid.PixelOf(v.start_ns) + 1 < grid.PixelOf(end)) {
        const uint32_t inside = grid.PixelOf(v.start_ns) + 1;
        auto h2 =
            HitSlice(*store, track, v.depth, t0, t1, pixels, inside + 0.5, 0);
        QVERIFY(h2.has_value());
        QCOMPARE(h2->index, v.index);
      }
    }
  }
  // Nothing beyond the deepest depth or far outside the window.
  QVERIFY(!HitSlice(*store, track, s.depth_count(), t0, t1, 100, 50.0));
  QVERIFY(!HitSlice(*store, track, 0, t0, t1, 100, 500.0));
}

void ViewModelTest::EnclosingSlicesAreTheNesting() {
  std::string dir;
  auto store = TwoHostStore(&dir);
  QVERIFY(store);
  const TrackId track = store->processes()[0].tracks[0];
  const SliceColumns& s = store->data(track).slices;
  int checked = 0;
  for (uint32_t i = 0; i < s.size(); i += 7) {
    const EventRef e{track, trace_format::EventKind::kSlice, i};
    const auto chain = EnclosingSlices(*store, e);
    QCOMPARE(chain.size(), size_t{s.depth(i)});
    for (size_t k = 0; k < chain.size(); ++k) {
      QCOMPARE(s.depth(chain[k].index), static_cast<uint32_t>(k));
      QVERIFY(s.start(chain[k].index) <= s.start(i));
      QVERIFY(s.end(chain[k].index) >= s.end(i));
    }
    ++checked;
  }
  QVERIFY(checked > 100);
  QCOMPARE(QString::fromStdString(std::string(ScopeOfName("layer1/matmul"))),
           QString("layer1"));
  QVERIFY(ScopeOfName("matmul").empty());
}

void ViewModelTest::NameColorsAreStable() {
  // Fixed values: a colour must not change between runs or builds.
  QCOMPARE(NameColorRgb("train_step"), NameColorRgb("train_step"));
  QVERIFY(NameColorRgb("forward") != NameColorRgb("backward"));
  int distinct = 0;
  std::set<uint32_t> seen;
  for (int i = 0; i < 50; ++i) {
    distinct += seen.insert(NameColorRgb("op" + std::to_string(i))).second;
  }
  QVERIFY(distinct >= 45);
  QVERIFY(PrefersLightText(0x101010));
  QVERIFY(!PrefersLightText(0xF0F0F0));
}

void ViewModelTest::LongTextGetsBreakOpportunities() {
  const QChar zwsp(0x200B);
  const QString path = QStringLiteral(
      "worker-node-0042.cluster.example.com › pid 4242 (process 3) › "
      "pjrt_device_stream_compute_0_with_a_very_long_name");
  const QString shown = BreakableText(path, 16);
  QCOMPARE(QString(shown).remove(zwsp), path);
  // No run of more than 16 characters without a place to break.
  int run = 0;
  for (const QChar c : shown) {
    if (c == zwsp || c.isSpace()) {
      run = 0;
    } else {
      ++run;
      QVERIFY2(run <= 17, qPrintable(shown));
    }
  }
  // Short plain words are left alone.
  QCOMPARE(BreakableText(QStringLiteral("step 12")), QStringLiteral("step 12"));
  QCOMPARE(BreakableText(QString()), QString());
}

}  // namespace podscope::viewer::app

QTEST_APPLESS_MAIN(podscope::viewer::app::ViewModelTest)
#include "view_model_test.moc"
