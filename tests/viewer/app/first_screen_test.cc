// The first screens of a job of several ranks, in the real main window
// under the offscreen platform: every rank's main thread and device stream
// on one screen (3 ranks as opened; 16 ranks side by side with compact
// rows), counters folded into one row per rank, tracks hidden and shown
// from their context menu, the steps of `podscope analyze` in the Steps
// tab and as "step N" bands, and the keys and clicks that must not fight
// the user.
#include <QAction>
#include <QApplication>
#include <QContextMenuEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QStatusBar>
#include <QTableWidget>
#include <QTimer>
#include <QtTest>
#include <map>

#include "hit_test.h"
#include "main_window.h"
#include "podscope/viewer/pod_analysis.h"
#include "rank_test_capture.h"
#include "render_context.h"
#include "search_bar.h"
#include "steps_panel.h"
#include "time_format.h"
#include "timeline_widget.h"
#include "trace_gen.h"

namespace podscope::viewer::app {
namespace {

namespace proto = trace_format::proto;

constexpr int kSteps = 12;

void Open(MainWindow& w, const std::string& path, QSize size) {
  w.resize(size);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.OpenPath(QString::fromStdString(path));
  QVERIFY(loaded.wait(60000) || loaded.count() > 0);
  QVERIFY(w.WaitUntilIdle(60000));
}

// Whether a track's row lies wholly inside the timeline's plot as shown.
bool RowOnScreen(const TimelineWidget& t, TrackId track) {
  const int r = t.layout().RowOfTrack(track);
  if (r < 0) return false;
  const LayoutRow& row = t.layout().rows()[r];
  const int top = row.y - t.scroll_y();
  return top >= 0 && top + row.height <= t.PlotRect().height();
}

// The tracks of each rank's main thread and device streams.
struct RankTracks {
  TrackId main = 0;
  std::vector<TrackId> streams;
  std::vector<TrackId> others;  // threads but main, counters
};
std::vector<RankTracks> TracksByRank(const TraceStore& store) {
  std::vector<RankTracks> out(store.processes().size());
  for (const TrackInfo& t : store.tracks()) {
    const int rank = store.processes()[t.process].process_index;
    RankTracks& r = out.at(static_cast<size_t>(rank));
    if (t.kind == proto::TRACK_KIND_DEVICE_STREAM) {
      r.streams.push_back(t.id);
    } else if (t.kind == proto::TRACK_KIND_THREAD && t.name == "main") {
      r.main = t.id;
    } else {
      r.others.push_back(t.id);
    }
  }
  return out;
}

// Triggers the action named `name` of the context menu the timeline opens
// for a right click at `pos`.
void ContextMenuAction(TimelineWidget* t, QPoint pos, const char* name) {
  bool triggered = false;
  QTimer::singleShot(0, [&] {
    auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
    if (menu == nullptr) return;
    if (auto* a = menu->findChild<QAction*>(name); a && a->isEnabled()) {
      a->trigger();
      triggered = true;
    }
    menu->close();
  });
  QContextMenuEvent event(QContextMenuEvent::Mouse, pos, t->mapToGlobal(pos));
  QApplication::sendEvent(t, &event);
  QVERIFY2(triggered, name);
}

// The widget point at the middle of a track row's label.
QPoint LabelOf(const TimelineWidget& t, TrackId track) {
  const LayoutRow& row = t.layout().rows()[t.layout().RowOfTrack(track)];
  return QPoint(60, t.PlotRect().y() + row.y - t.scroll_y() + row.height / 2);
}

}  // namespace

class FirstScreenTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void ThreeRanksShowEveryRankOnTheFirstScreen();
  void SixteenRanksSideBySideFitCompactRows();
  void ShortWindowShowsRanksSideBySideReadably();
  void ContextMenuHidesAndShowsOnlyATrack();
  void StepsAreAnalyzesStepsPerRank();
  void ZoomAndPanKeysWorkFromAnyPanel();
  void ClickToTakeFocusKeepsTheSelection();
  void CollapseAllHostsLeavesNoEmptyRow();

 private:
  std::string dir_;
  std::string three_;
};

void FirstScreenTest::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  dir_ = testing::TempDir("first_screen");
  three_ = testing::WriteRankSession(dir_, 3, kSteps);
}

void FirstScreenTest::ThreeRanksShowEveryRankOnTheFirstScreen() {
  MainWindow w;
  Open(w, three_, QSize(1600, 1000));
  TimelineWidget* t = w.timeline();
  const TraceStore& store = *w.store();
  QCOMPARE(store.processes().size(), size_t{3});
  const auto ranks = TracksByRank(store);
  const QImage image = t->grab().toImage();
  for (size_t r = 0; r < ranks.size(); ++r) {
    QVERIFY2(RowOnScreen(*t, ranks[r].main), qPrintable(QString::number(r)));
    QVERIFY(!ranks[r].streams.empty());
    for (TrackId s : ranks[r].streams) QVERIFY(RowOnScreen(*t, s));
    // The main thread's first lane is painted (its steps run all along).
    const LayoutRow& row =
        t->layout().rows()[t->layout().RowOfTrack(ranks[r].main)];
    const int y = t->PlotRect().y() + row.y - t->scroll_y() + row.slice_top + 2;
    int painted = 0;
    for (int x = t->PlotRect().x(); x < t->PlotRect().right(); ++x) {
      const QRgb c = image.pixel(x, y);
      painted += qRed(c) < 235 || qGreen(c) < 235 || qBlue(c) < 235;
    }
    QVERIFY2(painted > t->PlotRect().width() / 3,
             qPrintable(QString::number(painted)));
  }
  // Each rank's counters are one collapsed row, listing none of them.
  int counter_rows = 0;
  for (const LayoutRow& row : t->layout().rows()) {
    if (row.kind != RowKind::kCounters) continue;
    ++counter_rows;
    QVERIFY(row.collapsed);
    QCOMPARE(row.depths, 3u);
  }
  QCOMPARE(counter_rows, 3);
  for (const TrackInfo& info : store.tracks()) {
    if (info.kind == proto::TRACK_KIND_COUNTER) {
      QCOMPARE(t->layout().RowOfTrack(info.id), -1);
    }
  }
  // A click on rank 1's counters row lists its counters.
  int row1 = -1;
  for (size_t i = 0; i < t->layout().rows().size(); ++i) {
    const LayoutRow& row = t->layout().rows()[i];
    if (row.kind == RowKind::kCounters &&
        store.processes()[row.process].process_index == 1) {
      row1 = static_cast<int>(i);
    }
  }
  QVERIFY(row1 >= 0);
  const LayoutRow counters = t->layout().rows()[row1];
  QTest::mouseClick(t, Qt::LeftButton, {},
                    QPoint(40, t->PlotRect().y() + counters.y - t->scroll_y() +
                                   counters.height / 2));
  int listed = 0;
  for (const TrackInfo& info : store.tracks()) {
    if (info.kind == proto::TRACK_KIND_COUNTER &&
        t->layout().RowOfTrack(info.id) >= 0) {
      ++listed;
      QCOMPARE(store.processes()[info.process].process_index, 1);
    }
  }
  QCOMPARE(listed, 3);
}

// When every thread of every rank does not fit at full height, the first
// screen shows every rank's main thread and device streams at full height,
// where their names can be read, rather than rows too low to name; the
// status says so, and the View action brings every thread back.
void FirstScreenTest::ShortWindowShowsRanksSideBySideReadably() {
  MainWindow w;
  Open(w, three_, QSize(1600, 800));
  TimelineWidget* t = w.timeline();
  QVERIFY(t->first_screen_fits());
  QVERIFY(t->layout().ranks_side_by_side());
  QVERIFY(!t->layout().compact());
  auto* side = w.findChild<QAction*>("action.sideBySide");
  QVERIFY(side != nullptr && side->isChecked());
  const auto ranks = TracksByRank(*w.store());
  const int text_height = QFontMetrics(t->font()).height();
  for (size_t r = 0; r < ranks.size(); ++r) {
    QVERIFY2(RowOnScreen(*t, ranks[r].main), qPrintable(QString::number(r)));
    const LayoutRow& main =
        t->layout().rows()[t->layout().RowOfTrack(ranks[r].main)];
    QVERIFY(main.height >= text_height);
    for (TrackId s : ranks[r].streams) {
      QVERIFY(RowOnScreen(*t, s));
      QVERIFY(t->layout().rows()[t->layout().RowOfTrack(s)].height >=
              text_height);
    }
    for (TrackId o : ranks[r].others) QCOMPARE(t->layout().RowOfTrack(o), -1);
  }
  bool says_so = false;
  for (QLabel* label : w.statusBar()->findChildren<QLabel*>()) {
    says_so |= label->text().contains("ranks side by side");
  }
  QVERIFY(says_so);
  // Every thread again.
  side->trigger();
  QVERIFY(!t->layout().ranks_side_by_side());
  for (const RankTracks& r : ranks) {
    for (TrackId o : r.others) {
      const TrackInfo& info = w.store()->tracks()[o];
      if (info.kind == proto::TRACK_KIND_THREAD &&
          w.store()->data(o).event_count() > 0) {
        QVERIFY(t->layout().RowOfTrack(o) >= 0);
      }
    }
  }
}

void FirstScreenTest::SixteenRanksSideBySideFitCompactRows() {
  const std::string sixteen = testing::WriteRankSession(dir_, 16, 4);
  MainWindow w;
  Open(w, sixteen, QSize(1600, 1000));
  TimelineWidget* t = w.timeline();
  auto* side = w.findChild<QAction*>("action.sideBySide");
  auto* compact = w.findChild<QAction*>("action.compact");
  QVERIFY(side != nullptr && compact != nullptr);
  if (!side->isChecked()) side->trigger();
  if (!compact->isChecked()) compact->trigger();
  QVERIFY(t->layout().ranks_side_by_side());
  QVERIFY(t->layout().compact());
  const auto ranks = TracksByRank(*w.store());
  QCOMPARE(ranks.size(), size_t{16});
  int previous_y = -1;
  for (size_t r = 0; r < ranks.size(); ++r) {
    QVERIFY2(RowOnScreen(*t, ranks[r].main), qPrintable(QString::number(r)));
    for (TrackId s : ranks[r].streams) QVERIFY(RowOnScreen(*t, s));
    // Only the main thread and the streams, stacked by rank.
    for (TrackId o : ranks[r].others) QCOMPARE(t->layout().RowOfTrack(o), -1);
    const int y = t->layout().rows()[t->layout().RowOfTrack(ranks[r].main)].y;
    QVERIFY(y > previous_y);
    previous_y = y;
  }
  for (const LayoutRow& row : t->layout().rows()) {
    QVERIFY(row.kind != RowKind::kHost);
  }
  // Back to every track.
  side->trigger();
  QVERIFY(!t->layout().ranks_side_by_side());
  QVERIFY(t->layout().RowOfTrack(ranks[0].others.front()) >= 0 ||
          w.store()->tracks()[ranks[0].others.front()].kind ==
              proto::TRACK_KIND_COUNTER);
  // Side by side again: showing an event of a track it does not list
  // (a search hit, a flow) lists every track.
  side->trigger();
  TrackId loader = 0;
  for (TrackId o : ranks[5].others) {
    if (w.store()->tracks()[o].name == "loader") loader = o;
  }
  QCOMPARE(t->layout().RowOfTrack(loader), -1);
  t->Select(EventRef{loader, trace_format::EventKind::kSlice, 0},
            /*reveal=*/true);
  QVERIFY(t->layout().RowOfTrack(loader) >= 0);
  QVERIFY(!side->isChecked());
}

void FirstScreenTest::ContextMenuHidesAndShowsOnlyATrack() {
  MainWindow w;
  Open(w, three_, QSize(1600, 1000));
  TimelineWidget* t = w.timeline();
  const auto ranks = TracksByRank(*w.store());
  // Hide rank 0's main thread.
  ContextMenuAction(t, LabelOf(*t, ranks[0].main), "track.hide");
  QCOMPARE(t->layout().RowOfTrack(ranks[0].main), -1);
  QVERIFY(t->layout().RowOfTrack(ranks[1].main) >= 0);
  // Only rank 1's stream.
  const TrackId stream = ranks[1].streams.front();
  ContextMenuAction(t, LabelOf(*t, stream), "track.only");
  int tracks = 0;
  for (const LayoutRow& row : t->layout().rows()) {
    tracks += row.kind == RowKind::kTrack;
    // No host or rank without a shown track keeps a row.
    QVERIFY(row.kind == RowKind::kHost ||
            w.store()->processes()[row.process].process_index == 1);
  }
  QCOMPARE(tracks, 1);
  QVERIFY(RowOnScreen(*t, stream));
  // And every track back, from the menu of any row.
  ContextMenuAction(t, LabelOf(*t, stream), "track.all");
  for (const RankTracks& r : ranks) {
    QVERIFY(t->layout().RowOfTrack(r.main) >= 0);
  }
  // View › Show All Tracks does the same.
  ContextMenuAction(t, LabelOf(*t, ranks[2].main), "track.hide");
  auto* all = w.findChild<QAction*>("action.showAllTracks");
  QVERIFY(all != nullptr && all->isEnabled());
  all->trigger();
  QVERIFY(t->layout().RowOfTrack(ranks[2].main) >= 0);
  QVERIFY(!all->isEnabled());
}

void FirstScreenTest::StepsAreAnalyzesStepsPerRank() {
  MainWindow w;
  Open(w, three_, QSize(1600, 1000));
  TimelineWidget* t = w.timeline();
  const TraceStore& store = *w.store();
  // The Steps tab: a row per rank, each with its 12 steps, whose shortest
  // is a whole step's window (not a nested "optimizer_step").
  QTableWidget* table = w.steps()->table();
  QCOMPARE(table->rowCount(), 3);
  for (int r = 0; r < 3; ++r) {
    QVERIFY2(table->item(r, 0)->text().startsWith("rank "),
             qPrintable(table->item(r, 0)->text()));
    QCOMPARE(table->item(r, 1)->text(), QString::number(kSteps));
    QCOMPARE(table->item(r, 3)->text(),
             QString::fromStdString(FormatDuration(testing::kRankStepWindow)));
  }
  // The timeline's bands: podscope analyze's windows, on each rank.
  const StepBreakdown analyzed = AnalyzeSteps(store);
  std::map<std::pair<ProcessId, int64_t>, std::pair<int64_t, int64_t>> want;
  for (const StepRow& row : analyzed.rows) {
    for (size_t r = 0; r < row.ranks.size(); ++r) {
      const StepCell& c = row.ranks[r];
      if (c.present) {
        want[{analyzed.ranks[r].process, row.step}] = {
            c.start_ns, c.start_ns + c.duration_ns};
      }
    }
  }
  QCOMPARE(t->steps().size(), size_t{3 * kSteps});
  QCOMPARE(want.size(), t->steps().size());
  for (const StepBand& b : t->steps()) {
    const int rank = store.processes()[b.process].process_index;
    const int64_t start =
        testing::RankStepStart(rank, static_cast<int>(b.number));
    QCOMPARE(b.start_ns, start);
    QCOMPARE(b.end_ns, start + testing::kRankStepWindow);
    const auto it = want.find({b.process, b.number});
    QVERIFY(it != want.end());
    QCOMPARE(it->second, std::make_pair(b.start_ns, b.end_ns));
  }
  // On screen: rank 1's step 3 band, with its name, over its process row.
  const int rank1 = [&] {
    for (const ProcessInfo& p : store.processes()) {
      if (p.process_index == 1) return static_cast<int>(p.id);
    }
    return -1;
  }();
  const int64_t s3 = testing::RankStepStart(1, 3);
  t->ZoomToTimes(s3, s3 + testing::kRankStepWindow);
  const QImage image = t->grab().toImage();
  const QRect plot = t->PlotRect();
  int process_row = -1;
  for (size_t i = 0; i < t->layout().rows().size(); ++i) {
    const LayoutRow& row = t->layout().rows()[i];
    if (row.kind == RowKind::kProcess &&
        row.process == static_cast<ProcessId>(rank1)) {
      process_row = static_cast<int>(i);
    }
  }
  QVERIFY(process_row >= 0);
  const LayoutRow& prow = t->layout().rows()[process_row];
  const int y = plot.y() + prow.y - t->scroll_y() + prow.height / 2;
  auto x_of = [&](int64_t ns) {
    return plot.x() + static_cast<int>(t->axis().TimeToX(ns));
  };
  const QRgb inside = image.pixel(
      x_of(s3 + testing::kRankStepWindow - testing::kRankStepWindow / 20), y);
  const QRgb outside = image.pixel(
      x_of(s3 + testing::kRankStepWindow + testing::kRankStepWindow / 20), y);
  QVERIFY2(inside != outside,
           qPrintable(QString("%1 %2").arg(inside, 8, 16).arg(outside, 8, 16)));
  QCOMPARE(outside, render::kProcessRow.rgb());
}

void FirstScreenTest::ZoomAndPanKeysWorkFromAnyPanel() {
  MainWindow w;
  Open(w, three_, QSize(1600, 1000));
  TimelineWidget* t = w.timeline();
  QTableWidget* table = w.steps()->table();
  table->setFocus();
  QVERIFY(QTest::qWaitFor([&] { return table->hasFocus(); }));
  const int64_t span = t->axis().span();
  QTest::keyClick(table, Qt::Key_W);
  QVERIFY2(t->axis().span() < span, "W zooms in from the Steps table");
  const int64_t zoomed = t->axis().span();
  const int64_t t0 = t->axis().t0();
  QTest::keyClick(table, Qt::Key_D);
  QVERIFY2(t->axis().t0() > t0, "D pans from the Steps table");
  QTest::keyClick(table, Qt::Key_S);
  QVERIFY(t->axis().span() > zoomed);
  // A text field keeps its letters.
  QLineEdit* find = w.search()->line_edit();
  find->setFocus();
  QVERIFY(QTest::qWaitFor([&] { return find->hasFocus(); }));
  const int64_t before = t->axis().span();
  QTest::keyClicks(find, "was");
  QCOMPARE(find->text(), QStringLiteral("was"));
  QCOMPARE(t->axis().span(), before);
}

void FirstScreenTest::ClickToTakeFocusKeepsTheSelection() {
  MainWindow w;
  Open(w, three_, QSize(1600, 1000));
  TimelineWidget* t = w.timeline();
  const auto ranks = TracksByRank(*w.store());
  const EventRef step{ranks[0].main, trace_format::EventKind::kSlice, 0};
  t->Select(step);
  QVERIFY(t->selected().has_value());
  // Focus elsewhere, then a click on empty timeline: rank 0's main thread
  // before its first step (the whole trace is shown with a margin).
  w.steps()->table()->setFocus();
  QVERIFY(QTest::qWaitFor([&] { return w.steps()->table()->hasFocus(); }));
  const QRect plot = t->PlotRect();
  const LayoutRow& main_row =
      t->layout().rows()[t->layout().RowOfTrack(ranks[0].main)];
  const QPoint empty(plot.x() + 3, plot.y() + main_row.y - t->scroll_y() +
                                       main_row.slice_top + 2);
  QVERIFY(plot.contains(empty));
  QVERIFY(!t->EventAt(empty).has_value());
  QTest::mouseClick(t, Qt::LeftButton, {}, empty);
  QVERIFY(t->hasFocus());
  QVERIFY2(t->selected().has_value(), "the click only took focus");
  // With focus, a click on nothing clears it.
  QTest::mouseClick(t, Qt::LeftButton, {}, empty);
  QVERIFY(!t->selected().has_value());
}

void FirstScreenTest::CollapseAllHostsLeavesNoEmptyRow() {
  MainWindow w;
  Open(w, three_, QSize(1600, 1000));
  TimelineWidget* t = w.timeline();
  t->SetAllCollapsed(true);
  const QImage image = t->grab().toImage();
  const QRect plot = t->PlotRect();
  QVERIFY(!t->layout().rows().empty());
  for (const LayoutRow& row : t->layout().rows()) {
    QVERIFY(row.collapsed);
    // The row's plot shows how busy what it holds was: most of its width
    // is painted over the header's colour.
    const int y = plot.y() + row.y - t->scroll_y() + row.height / 2;
    int painted = 0;
    for (int x = plot.x(); x < plot.right(); ++x) {
      const QRgb c = image.pixel(x, y);
      painted += c != render::kHostRow.rgb() &&
                 c != render::kProcessRow.rgb() && c != render::kGrid.rgb();
    }
    QVERIFY2(painted > plot.width() / 2, qPrintable(QString::number(painted)));
  }
}

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::FirstScreenTest)
#include "first_screen_test.moc"
