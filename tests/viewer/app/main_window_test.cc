// The real main window under the offscreen platform: open a multi-host
// capture, zoom, pan, select, follow a flow, search, select a range and
// compare the statistics with viewer/core's, and open damaged data.
#include "main_window.h"

#include <QCheckBox>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QRegularExpression>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "app_test_capture.h"
#include "bench_capture.h"
#include "details_panel.h"
#include "flame_graph_widget.h"
#include "podscope/viewer/analysis.h"
#include "podscope/viewer/pod_analysis.h"
#include "search_bar.h"
#include "stats_panel.h"
#include "steps_panel.h"
#include "time_format.h"
#include "timeline_widget.h"
#include "trace_gen.h"

namespace podscope::viewer::app {
namespace {

namespace fs = std::filesystem;
using trace_format::EventKind;

// The landmark slice of the test capture, found through viewer/core.
EventRef FindLandmark(const TraceStore& store) {
  const auto name = store.FindString("landmark");
  for (TrackId t = 0; t < store.tracks().size(); ++t) {
    const SliceColumns& s = store.data(t).slices;
    for (uint32_t i = 0; i < s.size(); ++i) {
      if (name && s.name(i) == *name) return {t, EventKind::kSlice, i};
    }
  }
  return {};
}

void SendWheel(QWidget* w, QPoint pos, int delta,
               Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  QWheelEvent event(QPointF(pos), QPointF(w->mapToGlobal(pos)), QPoint(),
                    QPoint(0, delta), Qt::NoButton, modifiers,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &event);
}

// A press, moves and a release, sent straight to the widget (QTest's
// mouseMove for widgets moves the cursor instead, which the offscreen
// platform does not turn into events).
void Drag(QWidget* w, QPoint from, QPoint to,
          Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  auto send = [&](QEvent::Type type, QPoint pos, Qt::MouseButton button,
                  Qt::MouseButtons buttons) {
    QMouseEvent e(type, QPointF(pos), QPointF(w->mapToGlobal(pos)), button,
                  buttons, modifiers);
    QApplication::sendEvent(w, &e);
  };
  send(QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton);
  send(QEvent::MouseMove, (from + to) / 2, Qt::NoButton, Qt::LeftButton);
  send(QEvent::MouseMove, to, Qt::NoButton, Qt::LeftButton);
  send(QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton);
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void OpensEveryHostOfTheCapture();
  void ZoomsAroundTheCursorAndPans();
  void ClickSelectsAndShowsDetailsAndFollowsFlows();
  void CollapsesAndExpandsHosts();
  void SearchStepsThroughHitsInTimeOrder();
  void RangeStatisticsMatchTheCore();
  void FlameGraphCountsTheRangeSamples();
  void DamagedFilesOpenWithAWarning();
  void UnreadableTraceSaysWhy();
  void RememberRecentFiles();
  void CancelStopsALoadAndKeepsWhatWasShown();
  void OpenFileOffersEveryFormatItReads();

 private:
  void Open(MainWindow& w, const std::string& path);

  std::string dir_;
  std::string session_;
  std::unique_ptr<TraceStore> store_;  // the same capture, for expectations
};

void MainWindowTest::initTestCase() {
  QStandardPaths::setTestModeEnabled(true);
  dir_ = testing::TempDir("app_window");
  session_ = testing::WriteAppTestCapture(dir_);
  auto store = TraceStore::Open(session_);
  QVERIFY2(store.ok(), std::string(store.status().message()).c_str());
  store_ = std::move(*store);
}

void MainWindowTest::Open(MainWindow& w, const std::string& path) {
  w.resize(1400, 900);
  w.show();
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.OpenPath(QString::fromStdString(path));
  QVERIFY(loaded.wait(60000) || loaded.count() > 0);
  QVERIFY(w.WaitUntilIdle(60000));
}

void MainWindowTest::OpensEveryHostOfTheCapture() {
  MainWindow w;
  Open(w, session_);
  QVERIFY(w.store());
  QCOMPARE(w.store()->hosts().size(), size_t{testing::kCaptureHosts});
  QCOMPARE(w.store()->event_count(), store_->event_count());
  QVERIFY(!w.banner_shown());
  // host -> process -> tracks, every track of the store with events shown.
  const TrackLayout& layout = w.timeline()->layout();
  int hosts = 0, processes = 0, tracks = 0;
  for (const LayoutRow& r : layout.rows()) {
    hosts += r.kind == RowKind::kHost;
    processes += r.kind == RowKind::kProcess;
    tracks += r.kind == RowKind::kTrack;
  }
  QCOMPARE(hosts, testing::kCaptureHosts);
  QCOMPARE(processes, testing::kCaptureHosts);
  // Every track but the counters, which start folded into a row per
  // process; Expand All lists them.
  int counter_tracks = 0;
  for (const TrackInfo& info : store_->tracks()) {
    counter_tracks += info.kind == trace_format::proto::TRACK_KIND_COUNTER;
  }
  QCOMPARE(tracks, static_cast<int>(store_->tracks().size()) - counter_tracks);
  w.timeline()->SetAllCollapsed(false);
  tracks = 0;
  for (const LayoutRow& r : layout.rows()) tracks += r.kind == RowKind::kTrack;
  QCOMPARE(tracks, static_cast<int>(store_->tracks().size()));
  // The counter track is drawn as a line track.
  bool counter = false;
  for (const LayoutRow& r : layout.rows()) {
    counter |= r.kind == RowKind::kTrack && r.counter_top >= 0;
  }
  QVERIFY(counter);
  // The steps table: one row per rank with steps, as `podscope analyze`
  // counts them; activating a row selects that rank's slowest step.
  const StepBreakdown steps = AnalyzeSteps(*store_);
  QVERIFY(!steps.rows.empty());
  QTableWidget* table = w.steps()->table();
  int with_steps = 0;
  for (const RankStepTotals& t : steps.totals) with_steps += t.steps > 0;
  QCOMPARE(table->rowCount(), with_steps);
  const StepCell* slowest = nullptr;
  for (const StepRow& r : steps.rows) {
    if (r.ranks[0].present &&
        (slowest == nullptr || r.ranks[0].duration_ns > slowest->duration_ns)) {
      slowest = &r.ranks[0];
    }
  }
  QVERIFY(slowest != nullptr);
  int row0 = -1;
  for (int r = 0; r < table->rowCount(); ++r) {
    if (table->item(r, 0)->text().startsWith(
            QStringLiteral("rank %1 ").arg(steps.ranks[0].rank))) {
      row0 = r;
    }
  }
  QVERIFY(row0 >= 0);
  QCOMPARE(table->item(row0, 1)->text(),
           QString::number(steps.totals[0].steps));
  emit table->cellActivated(row0, 0);
  QVERIFY(w.timeline()->selected().has_value());
  QCOMPARE(*w.timeline()->selected(), slowest->event);
  w.timeline()->Select(std::nullopt);
  w.timeline()->FitAll();
  // The window starts on the whole trace.
  QVERIFY(w.timeline()->axis().t0() <= store_->first_ns());
  QVERIFY(w.timeline()->axis().t1() >= store_->last_ns());
}

void MainWindowTest::ZoomsAroundTheCursorAndPans() {
  MainWindow w;
  Open(w, session_);
  TimelineWidget* t = w.timeline();
  const QRect plot = t->PlotRect();
  const QPoint at(plot.x() + plot.width() / 4, plot.y() + 40);
  const double x = at.x() - plot.x();
  const int64_t before_span = t->axis().span();
  const int64_t under_cursor = t->axis().XToTime(x);
  SendWheel(t, at, 120);
  const int64_t after_span = t->axis().span();
  QVERIFY2(after_span < before_span * 0.9, "the wheel zooms in");
  // The time under the cursor stays there (to a pixel).
  const double ns_per_px = t->axis().NsPerPixel();
  QVERIFY(std::llabs(t->axis().XToTime(x) - under_cursor) <= ns_per_px + 1);
  SendWheel(t, at, -120);
  QVERIFY(std::llabs(t->axis().span() - before_span) <= before_span / 100);

  // Keys: W in, S out.
  t->setFocus();
  QTest::keyClick(t, Qt::Key_W);
  QVERIFY(t->axis().span() < before_span);
  QTest::keyClick(t, Qt::Key_W);
  const int64_t zoomed = t->axis().span();
  QTest::keyClick(t, Qt::Key_S);
  QVERIFY(t->axis().span() > zoomed);

  // Drag pans: the content follows the mouse (in the middle of the trace,
  // away from the margins where panning stops).
  t->SetWindow(store_->first_ns() + 300'000'000,
               store_->first_ns() + 500'000'000);
  const int64_t t0 = t->axis().t0();
  const double npp = t->axis().NsPerPixel();
  const QPoint from(plot.x() + 300, plot.y() + 30);
  const QPoint to = from + QPoint(-200, 0);
  Drag(t, from, to);
  const double moved = static_cast<double>(t->axis().t0() - t0);
  QVERIFY2(std::fabs(moved - 200 * npp) <= 2 * npp,
           qPrintable(
               QString("panned %1 ns, expected %2").arg(moved).arg(200 * npp)));
  // Keys: D pans later, A earlier.
  const int64_t before_key = t->axis().t0();
  QTest::keyClick(t, Qt::Key_D);
  QVERIFY(t->axis().t0() > before_key);
  QTest::keyClick(t, Qt::Key_A);
  QCOMPARE(t->axis().t0(), before_key);
  // 0 shows the whole trace again.
  QTest::keyClick(t, Qt::Key_0);
  QVERIFY(t->axis().t0() <= store_->first_ns());
  QVERIFY(t->axis().t1() >= store_->last_ns());
}

void MainWindowTest::ClickSelectsAndShowsDetailsAndFollowsFlows() {
  MainWindow w;
  Open(w, session_);
  TimelineWidget* t = w.timeline();
  const EventRef landmark = FindLandmark(*store_);
  QVERIFY(store_->str(store_->NameOf(landmark)) == "landmark");
  const auto point = t->PointOf(landmark);
  QVERIFY2(point.has_value(), "the landmark is on screen at the start");
  QTest::mouseClick(t, Qt::LeftButton, Qt::NoModifier, *point);
  QVERIFY(t->selected().has_value());
  QCOMPARE(*t->selected(), landmark);
  DetailsPanel* d = w.details();
  QCOMPARE(d->field("name"), QString("landmark"));
  QCOMPARE(d->field("duration"),
           QString::fromStdString(FormatDuration(testing::kLandmarkDuration)));
  QVERIFY(d->field("track").contains("hostA"));
  QVERIFY(d->field("track").contains("landmarks"));
  QVERIFY(
      d->field("start").contains(QString::number(store_->StartOf(landmark))));
  QCOMPARE(d->args_table()->rowCount(), 3);
  QMap<QString, QString> args;
  for (int r = 0; r < 3; ++r) {
    args[d->args_table()->item(r, 0)->text()] =
        d->args_table()->item(r, 1)->text();
  }
  QCOMPARE(args["batch"], QString("42"));
  QCOMPARE(args["phase"], QString("warmup"));
  QCOMPARE(args["lr"], QString("0.125"));

  // Clicking empty space clears the selection.
  const QRect plot = t->PlotRect();
  const double empty_x = t->axis().TimeToX(store_->StartOf(landmark) -
                                           testing::kLandmarkDuration / 10);
  QTest::mouseClick(t, Qt::LeftButton, Qt::NoModifier,
                    QPoint(plot.x() + static_cast<int>(empty_x), point->y()));
  QVERIFY(!t->selected().has_value());
  QCOMPARE(d->field("name"), QString());

  // A host slice that launched a kernel: its flow leads to the device.
  // The longest one, zoomed to.
  std::optional<EventRef> launch;
  for (TrackId id = 0; id < store_->tracks().size(); ++id) {
    if (store_->tracks()[id].name != "main") continue;
    const SliceColumns& s = store_->data(id).slices;
    for (uint32_t i = 0; i < s.size(); ++i) {
      const EventRef e{id, EventKind::kSlice, i};
      if (!store_->Flows(e).empty() &&
          (!launch || s.duration(i) > store_->DurationOf(*launch))) {
        launch = e;
      }
    }
  }
  QVERIFY(launch.has_value());
  t->Select(*launch, /*reveal=*/true);
  const int64_t ls = store_->StartOf(*launch);
  const int64_t ld = store_->DurationOf(*launch);
  t->SetWindow(ls - ld, ls + 2 * ld);
  const auto lp = t->PointOf(*launch);
  QVERIFY(lp.has_value());
  // Select it by clicking where it is drawn.
  t->Select(std::nullopt);
  QTest::mouseClick(t, Qt::LeftButton, Qt::NoModifier, *lp);
  QVERIFY(t->selected().has_value());
  QCOMPARE(*t->selected(), *launch);
  QCOMPARE(d->flows_list()->count(), 1);
  const EventRef kernel = store_->Flows(*launch)[0].event;
  QCOMPARE(*d->flow_target(0), kernel);
  QVERIFY(d->flows_list()->item(0)->text().contains("matmul"));
  QListWidget* flows = d->flows_list();
  const QRect item_rect = flows->visualItemRect(flows->item(0));
  QTest::mouseClick(flows->viewport(), Qt::LeftButton, Qt::NoModifier,
                    item_rect.center());
  QVERIFY(t->selected().has_value());
  QCOMPARE(*t->selected(), kernel);
  QVERIFY(d->field("track").contains("device 0 stream"));
  // The kernel's user scope comes from its name ("layerN/matmul").
  QVERIFY(d->field("scope").startsWith("layer"));
  // And the flow back leads to the launch.
  QCOMPARE(*d->flow_target(0), *launch);
  QVERIFY(t->PointOf(kernel).has_value());
}

void MainWindowTest::CollapsesAndExpandsHosts() {
  MainWindow w;
  Open(w, session_);
  TimelineWidget* t = w.timeline();
  const EventRef landmark = FindLandmark(*store_);
  const int rows = static_cast<int>(t->layout().rows().size());
  QVERIFY(t->layout().RowOfTrack(landmark.track) >= 0);
  // hostA's header is the first row; click its name in the track tree.
  const QRect plot = t->PlotRect();
  const QPoint header(30, plot.y() + t->layout().rows()[0].height / 2);
  QTest::mouseClick(t, Qt::LeftButton, Qt::NoModifier, header);
  QVERIFY(t->layout().host_collapsed(0));
  QCOMPARE(t->layout().RowOfTrack(landmark.track), -1);
  QVERIFY(static_cast<int>(t->layout().rows().size()) < rows);
  QTest::mouseClick(t, Qt::LeftButton, Qt::NoModifier, header);
  QVERIFY(!t->layout().host_collapsed(0));
  QCOMPARE(static_cast<int>(t->layout().rows().size()), rows);
  // Selecting an event under a collapsed header expands it.
  t->SetAllCollapsed(true);
  QCOMPARE(t->layout().RowOfTrack(landmark.track), -1);
  t->Select(landmark, /*reveal=*/true);
  QVERIFY(t->layout().RowOfTrack(landmark.track) >= 0);
}

void MainWindowTest::SearchStepsThroughHitsInTimeOrder() {
  MainWindow w;
  Open(w, session_);
  SearchBar* search = w.search();
  TimelineWidget* t = w.timeline();

  search->line_edit()->setText("landmark");
  search->Next();
  QVERIFY(t->selected().has_value());
  QCOMPARE(*t->selected(), FindLandmark(*store_));
  QCOMPARE(w.details()->field("name"), QString("landmark"));
  QCOMPARE(search->status_text(), QString("1 of 1"));

  // A substring with many hits: Next walks them in time order, Previous
  // walks back.
  search->line_edit()->setText("MATMUL");
  SearchQuery q;
  q.text = "MATMUL";
  auto hits = Search(*store_, q);
  QVERIFY(hits.ok());
  QVERIFY(hits->size() > 10);
  t->FitAll();
  for (size_t i = 0; i < 6; ++i) {
    QTest::keyClick(search->line_edit(), Qt::Key_Return);
    QVERIFY(search->current().has_value());
    QCOMPARE(search->current()->event, (*hits)[i].event);
    QCOMPARE(*t->selected(), (*hits)[i].event);
    QCOMPARE(search->status_text(),
             QString("%1 of %2").arg(i + 1).arg(hits->size()));
    // The hit is on screen.
    QVERIFY(t->PointOf((*hits)[i].event).has_value());
  }
  QTest::keyClick(search->line_edit(), Qt::Key_Return, Qt::ShiftModifier);
  QCOMPARE(search->current()->event, (*hits)[4].event);
  // Previous from the first wraps to the last.
  search->line_edit()->setText("matmul");
  t->FitAll();
  search->Next();
  QCOMPARE(search->current()->event, (*hits)[0].event);
  search->Previous();
  QCOMPARE(search->current()->event, hits->back().event);
  QVERIFY(search->status_text().contains("wrapped"));

  // A regex.
  search->regex_box()->setChecked(true);
  search->line_edit()->setText("^(forward|backward)$");
  q.text = "^(forward|backward)$";
  q.regex = true;
  auto regex_hits = Search(*store_, q);
  QVERIFY(regex_hits.ok() && !regex_hits->empty());
  t->FitAll();
  search->Next();
  QCOMPARE(search->current()->event, (*regex_hits)[0].event);
  search->Next();
  QCOMPARE(search->current()->event, (*regex_hits)[1].event);
  // A bad one says so.
  search->line_edit()->setText("(unclosed");
  search->Next();
  QVERIFY(search->status_text().contains("bad regex"));
  // No match says so.
  search->regex_box()->setChecked(false);
  search->line_edit()->setText("no such event name");
  search->Next();
  QCOMPARE(search->status_text(), QString("no matches"));
}

void MainWindowTest::RangeStatisticsMatchTheCore() {
  MainWindow w;
  Open(w, session_);
  TimelineWidget* t = w.timeline();
  StatsPanel* stats = w.stats();
  // Before any range: the whole trace.
  QVERIFY(stats->summary_text().contains("whole trace"));
  const auto whole =
      RangeStats(*store_, store_->first_ns(), store_->last_ns() + 1);
  QCOMPARE(stats->model()->rowCount(), static_cast<int>(whole.size()));

  // Shift-drag selects a range.
  const QRect plot = t->PlotRect();
  const QPoint a(plot.x() + plot.width() / 5, plot.y() + 50);
  const QPoint b(plot.x() + plot.width() / 2, plot.y() + 50);
  Drag(t, a, b, Qt::ShiftModifier);
  QVERIFY(t->range().has_value());
  const auto [r0, r1] = *t->range();
  QCOMPARE(r0, t->axis().XToTime(a.x() - plot.x()));
  QCOMPARE(r1, t->axis().XToTime(b.x() - plot.x()));
  QVERIFY(w.WaitUntilIdle(60000));
  QVERIFY(stats->summary_text().contains("range"));
  QVERIFY(stats->summary_text().contains(
      QString::fromStdString(FormatDuration(r1 - r0))));

  const auto expected = RangeStats(*store_, r0, r1);
  QVERIFY(!expected.empty());
  QVERIFY(expected.size() < whole.size() || expected[0].count < whole[0].count);
  const auto& got = stats->model()->stats();
  QCOMPARE(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    QCOMPARE(store_->str(got[i].name), store_->str(expected[i].name));
    QCOMPARE(got[i].count, expected[i].count);
    QCOMPARE(got[i].total_ns, expected[i].total_ns);
    QCOMPARE(got[i].self_ns, expected[i].self_ns);
    QCOMPARE(got[i].min_ns, expected[i].min_ns);
    QCOMPARE(got[i].max_ns, expected[i].max_ns);
  }
  // The table shows them sorted by total, longest first, formatted.
  QAbstractItemModel* shown = stats->view()->model();
  QCOMPARE(shown->rowCount(), static_cast<int>(expected.size()));
  QCOMPARE(shown->index(0, StatsModel::kName).data().toString(),
           QString::fromStdString(std::string(store_->str(expected[0].name))));
  QCOMPARE(shown->index(0, StatsModel::kCount).data().toString(),
           QString::number(expected[0].count));
  QCOMPARE(shown->index(0, StatsModel::kTotal).data().toString(),
           QString::fromStdString(FormatDuration(expected[0].total_ns)));
  // Sorting by count (a click on the header) orders by the number.
  stats->view()->sortByColumn(StatsModel::kCount, Qt::DescendingOrder);
  for (int r = 1; r < shown->rowCount(); ++r) {
    QVERIFY(shown->index(r - 1, StatsModel::kCount)
                .data(StatsModel::kSortRole)
                .toLongLong() >= shown->index(r, StatsModel::kCount)
                                     .data(StatsModel::kSortRole)
                                     .toLongLong());
  }
  // Per host: one row per (name, host, rank).
  stats->by_host_box()->setChecked(true);
  QVERIFY(w.WaitUntilIdle(60000));
  StatsOptions by_host;
  by_host.by_process = true;
  const auto per_host = RangeStats(*store_, r0, r1, by_host);
  QCOMPARE(stats->model()->rowCount(), static_cast<int>(per_host.size()));
  QCOMPARE(stats->model()->stats()[0].host, per_host[0].host);
  QCOMPARE(stats->model()->stats()[0].process, per_host[0].process);

  // Esc clears the range: back to the whole trace.
  t->setFocus();
  QTest::keyClick(t, Qt::Key_Escape);
  QVERIFY(!t->range().has_value());
  QVERIFY(w.WaitUntilIdle(60000));
  QVERIFY(stats->summary_text().contains("whole trace"));
}

void MainWindowTest::FlameGraphCountsTheRangeSamples() {
  MainWindow w;
  Open(w, session_);
  const FlameGraph expected =
      BuildFlameGraph(*store_, store_->first_ns(), store_->last_ns() + 1);
  QVERIFY(expected.samples > 0);
  QCOMPARE(w.flame_graph()->graph().samples, expected.samples);
  QCOMPARE(w.flame_graph()->graph().nodes.size(), expected.nodes.size());
  // It says what it covers: the samples, the time and the threads (each
  // host's main thread, testing::kCaptureHosts of them).
  QString caption = w.flame_graph()->caption();
  QCOMPARE(caption, QStringLiteral("%1 samples of the whole trace on 3 "
                                   "threads: hostA rank 0 main, hostB rank 1 "
                                   "main, hostC rank 2 main")
                        .arg(expected.samples));
  const int64_t mid = (store_->first_ns() + store_->last_ns()) / 2;
  w.timeline()->SetRange(std::make_pair(store_->first_ns(), mid));
  QVERIFY(w.WaitUntilIdle(60000));
  const FlameGraph half = BuildFlameGraph(*store_, store_->first_ns(), mid);
  QCOMPARE(w.flame_graph()->graph().samples, half.samples);
  QVERIFY(half.samples < expected.samples);
  caption = w.flame_graph()->caption();
  QVERIFY2(
      caption.startsWith(QStringLiteral("%1 samples of +0 ns – +%2 (%2) on ")
                             .arg(half.samples)
                             .arg(QString::fromStdString(
                                 FormatDuration(mid - store_->first_ns())))),
      qPrintable(caption));
  // On screen, above the frames.
  const QImage image = w.flame_graph()->grab().toImage();
  QVERIFY(w.flame_graph()->NodeAt(QPoint(5, 5)) != uint32_t{0});
  QVERIFY(image.pixelColor(2, FlameGraphWidget::kRowHeight / 2) !=
          QColor(0xB8, 0xC0, 0xCC));
}

void MainWindowTest::DamagedFilesOpenWithAWarning() {
  const std::string dir = testing::TempDir("app_damaged") + "/s";
  fs::create_directories(dir);
  for (int h = 0; h < testing::kCaptureHosts; ++h) {
    testing::WriteAppTestHost(dir + "/host" + char('A' + h) + "." +
                                  std::to_string(100 + h) + ".podtrace",
                              h);
  }
  std::ofstream(dir + "/zz.9.podtrace") << "this is not a trace file";
  const std::string cut = dir + "/hostB.101.podtrace";
  fs::resize_file(cut, fs::file_size(cut) * 2 / 3);

  MainWindow w;
  Open(w, dir);
  QVERIFY(w.store());
  QCOMPARE(w.store()->processes().size(), size_t{testing::kCaptureHosts});
  QVERIFY(w.banner_shown());
  const QString banner = w.banner_text();
  QVERIFY2(banner.contains("zz.9.podtrace could not be read"),
           qPrintable(banner));
  QVERIFY2(banner.contains("other 3 of 4 files are shown"), qPrintable(banner));
  QVERIFY2(banner.contains("hostB.101.podtrace is damaged"),
           qPrintable(banner));
  QVERIFY2(banner.contains("recovered"), qPrintable(banner));
  // The damaged host's recovered events are there.
  bool host_b_has_events = false;
  for (const ProcessInfo& p : w.store()->processes()) {
    host_b_has_events |= p.host_name == "hostB" && p.events > 0;
  }
  QVERIFY(host_b_has_events);

  // A single truncated file opens too, with the warning.
  MainWindow single;
  Open(single, cut);
  QVERIFY(single.store());
  QVERIFY(single.banner_text().contains("damaged"));
}

void MainWindowTest::UnreadableTraceSaysWhy() {
  const std::string dir = testing::TempDir("app_garbage");
  std::ofstream(dir + "/x.1.podtrace") << "garbage";
  MainWindow w;
  Open(w, dir);
  QVERIFY(!w.store());
  QVERIFY(!w.load_error().isEmpty());
  QVERIFY(w.banner_shown());
  QVERIFY(w.banner_text().contains("Could not open"));
  MainWindow missing;
  Open(missing, dir + "/does-not-exist");
  QVERIFY(!missing.store());
  QVERIFY(missing.banner_text().contains("does-not-exist"));
}

void MainWindowTest::RememberRecentFiles() {
  MainWindow w;
  Open(w, session_);
  QVERIFY(!w.recent_files().isEmpty());
  QCOMPARE(w.recent_files().front(), QString::fromStdString(session_));
}

void MainWindowTest::CancelStopsALoadAndKeepsWhatWasShown() {
  // 16 files of 125 000 events: loading takes long enough that a Cancel
  // pressed right after the load starts lands before it ends.
  const std::string big = testing::EnsureBenchCapture(2'000'000);
  MainWindow w;
  Open(w, session_);
  const auto shown = w.store();
  QVERIFY(shown);
  auto* cancel = w.findChild<QPushButton*>("status.cancel");
  QVERIFY(cancel);
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.OpenPath(QString::fromStdString(big));
  QVERIFY(w.loading());
  QVERIFY(cancel->isVisible());
  QTest::mouseClick(cancel, Qt::LeftButton);
  QVERIFY(loaded.wait(60000) || loaded.count() > 0);
  QCOMPARE(loaded.last().at(0).toBool(), false);
  QVERIFY(!w.loading());
  QVERIFY(!cancel->isVisible());
  // The trace shown before is still there, unchanged and without an error.
  QCOMPARE(w.store(), shown);
  QVERIFY(w.load_error().isEmpty());
  QVERIFY(!w.banner_shown());
  // And the cancelled trace opens when asked again.
  QSignalSpy again(&w, &MainWindow::loaded);
  w.OpenPath(QString::fromStdString(big));
  QVERIFY(again.wait(120000) || again.count() > 0);
  QCOMPARE(again.last().at(0).toBool(), true);
  QVERIFY(w.store() != shown);
  QVERIFY(w.store()->event_count() > 1'000'000);
}

void MainWindowTest::OpenFileOffersEveryFormatItReads() {
  // "Traces (...)" first, as the dialog's default, then all files.
  const QStringList filters =
      MainWindow::OpenFileFilter().split(QStringLiteral(";;"));
  QCOMPARE(filters.size(), 2);
  QVERIFY(filters[0].startsWith(QStringLiteral("Traces (")));
  QCOMPARE(filters[1], QStringLiteral("All files (*)"));
  const int open = filters[0].indexOf('(');
  const QStringList patterns =
      filters[0]
          .mid(open + 1, filters[0].lastIndexOf(')') - open - 1)
          .split(' ', Qt::SkipEmptyParts);
  auto matches = [&](const QString& name) {
    for (const QString& p : patterns) {
      const QRegularExpression re(
          QRegularExpression::wildcardToRegularExpression(p));
      if (re.match(name).hasMatch()) return true;
    }
    return false;
  };
  for (const char* name : {"host.1.podtrace", "worker-0.xplane.pb",
                           "trace.json", "rank-0.json.gz"}) {
    QVERIFY2(matches(QString::fromUtf8(name)), name);
  }
  QVERIFY(!matches(QStringLiteral("notes.txt")));
}

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::MainWindowTest)
#include "main_window_test.moc"
