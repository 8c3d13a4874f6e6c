// A session of 256 host files in the real main window (offscreen): it opens
// as one overview row per host, each shaded by how busy that host was, with
// no events in memory; expanding a host loads that host's events only. And
// a pod's session of 1,024 files: its rows come from the files' indexes,
// then each becomes its host's exact row (busy time and step ticks).
#include <QDockWidget>
#include <QImage>
#include <QtTest>
#include <string>

#include "main_window.h"
#include "render_context.h"
#include "timeline_widget.h"
#include "trace_gen.h"
#include "track_layout.h"

namespace podscope::viewer::app {
namespace {

constexpr int kHosts = 256;
constexpr int64_t kSpan = 100'000'000;  // 100 ms

// Host h is busy (one "train_step" on its main thread) for the first
// (h % 4 + 1) quarters of 100 ms less one, and marks the end of the span
// with a 1 us slice, so every host spans the same time.
int64_t BusyUntil(int h) { return kSpan / 4 * (h % 4 + 1) - kSpan / 8; }

testing::FileSpec HostFile(int h, int hosts = kHosts) {
  testing::FileSpec f;
  f.host = "node" + std::to_string(1000 + h);
  f.pid = 10 + h;
  f.process_index = h;
  f.process_count = hosts;
  f.strings = {"train_step", "tail"};
  testing::TrackSpec main;
  main.name = "main";
  main.slices.push_back({0, BusyUntil(h), 1});
  main.slices.push_back({kSpan - 1000, 1000, 2});
  f.tracks = {main};
  return f;
}

}  // namespace

class OverviewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    dir_ = testing::TempDir("app_overview");
    for (int h = 0; h < kHosts; ++h) {
      QVERIFY(testing::WriteFile(
                  dir_ + "/node" + std::to_string(1000 + h) + ".podtrace",
                  HostFile(h))
                  .ok());
    }
  }

  void opensOneRowPerHostAndLoadsAHostWhenExpanded() {
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    // The timeline gets the whole window.
    for (QDockWidget* d : w.findChildren<QDockWidget*>()) d->hide();
    QSignalSpy loaded(&w, &MainWindow::loaded);
    w.OpenPath(QString::fromStdString(dir_));
    QVERIFY(loaded.wait(60000) || loaded.count() > 0);
    QVERIFY(w.WaitUntilIdle(60000));
    auto store = w.store();
    QVERIFY(store != nullptr);
    QVERIFY(store->is_overview());
    QCOMPARE(store->hosts().size(), size_t{kHosts});
    QCOMPARE(store->event_count(), uint64_t{0});
    QCOMPARE(store->session_event_count(), uint64_t{2 * kHosts});
    // The overviews are all that is in memory: a few KiB per host.
    QVERIFY2(store->resident_bytes() <= size_t{kHosts} * 8192,
             qPrintable(QString::number(store->resident_bytes())));

    // One collapsed row per host, nothing else.
    const TrackLayout& layout = w.timeline()->layout();
    QCOMPARE(layout.rows().size(), size_t{kHosts});
    for (const LayoutRow& r : layout.rows()) {
      QVERIFY(r.kind == RowKind::kHost);
      QVERIFY(r.collapsed);
    }
    // Expanding everything does not load every host.
    w.timeline()->SetAllCollapsed(false);
    QCOMPARE(layout.rows().size(), size_t{kHosts});

    // Each of the first rows is shaded where its host was busy: the shaded
    // share of the row is the host's busy share.
    const QImage image = w.timeline()->grab().toImage();
    if (const char* out = std::getenv("PODSCOPE_OVERVIEW_PNG")) image.save(out);
    const QRect plot = w.timeline()->PlotRect();
    int checked = 0;
    for (int h = 0; h < 8; ++h) {
      const LayoutRow& row = layout.rows()[h];
      if (row.y + row.height - w.timeline()->scroll_y() > plot.height()) break;
      ++checked;
      const int y =
          plot.y() + row.y - w.timeline()->scroll_y() + row.height / 2;
      int shaded = 0;
      for (int x = plot.left(); x <= plot.right(); ++x) {
        const QRgb c = image.pixel(x, y);
        shaded += qBlue(c) > qRed(c) + 40;  // the overview's blue
      }
      // The pixels the busy time covers at the window's scale.
      const TimeAxis& axis = w.timeline()->axis();
      const double expected =
          axis.TimeToX(BusyUntil(h)) - axis.TimeToX(int64_t{0});
      QVERIFY2(std::abs(shaded - expected) <= 3,
               qPrintable(QString("host %1: %2 px shaded, %3 px busy")
                              .arg(h)
                              .arg(shaded)
                              .arg(expected)));
    }

    QVERIFY(checked >= 4);

    // Expanding host 5 loads it alone: its process and track rows appear.
    const HostId five = layout.rows()[5].host;
    w.timeline()->ToggleRow(5);
    QVERIFY(w.WaitUntilIdle(60000));
    for (ProcessId p : store->hosts()[five].processes) {
      QVERIFY(store->processes()[p].detail);
    }
    QCOMPARE(store->event_count(), uint64_t{2});
    int tracks = 0;
    for (const LayoutRow& r : layout.rows()) {
      if (r.kind == RowKind::kTrack) {
        ++tracks;
        QCOMPARE(r.host, five);
      }
    }
    QCOMPARE(tracks, 1);
    QCOMPARE(layout.rows().size(), size_t{kHosts + 2});
    int detailed = 0;
    for (const ProcessInfo& p : store->processes()) detailed += p.detail;
    QCOMPARE(detailed, 1);
  }

  void aPodOfAThousandHostsOpensAsOneRowPerHost() {
    constexpr int kPod = 1024;
    const std::string dir = testing::TempDir("app_overview1024");
    for (int h = 0; h < kPod; ++h) {
      QVERIFY(testing::WriteFile(
                  dir + "/node" + std::to_string(1000 + h) + ".podtrace",
                  HostFile(h, kPod))
                  .ok());
    }
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    for (QDockWidget* d : w.findChildren<QDockWidget*>()) d->hide();
    QSignalSpy loaded(&w, &MainWindow::loaded);
    w.OpenPath(QString::fromStdString(dir));
    QVERIFY(loaded.wait(60000) || loaded.count() > 0);
    QCOMPARE(loaded.takeFirst().at(0).toBool(), true);
    auto store = w.store();
    QVERIFY(store != nullptr);
    QVERIFY(store->is_overview());
    QCOMPARE(store->hosts().size(), size_t{kPod});
    QCOMPARE(store->session_event_count(), uint64_t{2 * kPod});
    // One collapsed row per host as soon as it is shown.
    const TrackLayout& layout = w.timeline()->layout();
    QCOMPARE(layout.rows().size(), size_t{kPod});
    for (const LayoutRow& r : layout.rows()) {
      QVERIFY(r.kind == RowKind::kHost);
      QVERIFY(r.collapsed);
    }
    // Then every row becomes its host's exact one: its step and how busy.
    QVERIFY(w.WaitUntilIdle(120000));
    QCOMPARE(layout.rows().size(), size_t{kPod});
    QCOMPARE(store->event_count(), uint64_t{0});
    for (int h = 0; h < kPod; ++h) {
      const ProcessInfo& p = store->processes()[store->hosts()[h].processes[0]];
      QVERIFY(p.overview != nullptr);
      QVERIFY2(p.overview->exact, qPrintable(QString::number(h)));
      QCOMPARE(p.overview->steps.size(), size_t{1});
      QCOMPARE(p.overview->steps[0].second, BusyUntil(h));
      const float busy = p.overview->BusyIn(0, kSpan);
      QVERIFY2(std::abs(busy - static_cast<float>(BusyUntil(h)) / kSpan) < 0.01,
               qPrintable(QString("host %1: busy %2").arg(h).arg(busy)));
    }
    // Expanding one host loads it alone.
    w.timeline()->ToggleRow(1000);
    QVERIFY(w.WaitUntilIdle(60000));
    QCOMPARE(store->event_count(), uint64_t{2});
    QCOMPARE(layout.rows().size(), size_t{kPod + 2});
  }

 private:
  std::string dir_;
};

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::OverviewTest)
#include "overview_test.moc"
