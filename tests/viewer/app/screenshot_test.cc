// podscope-viewer --screenshot run as a user runs it: the image shows an
// event box exactly where the window's geometry and viewer/core say it is,
// background where nothing is, and bad command lines fail with status 2.
#include <QImage>
#include <QProcess>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "app_test_capture.h"
#include "name_colors.h"
#include "podscope/viewer/trace_store.h"
#include "rank_test_capture.h"
#include "trace_gen.h"

namespace podscope::viewer::app {
namespace {

struct Run {
  int exit_code = -1;
  QString out;
  QString err;
};

Run RunViewer(const QStringList& args) {
  QProcess p;
  p.start(PODSCOPE_VIEWER_BINARY, args);
  Run r;
  if (!p.waitForFinished(240000)) {
    p.kill();
    r.err = "timed out";
    return r;
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

// The numbers after `key` on its line of the --verbose output.
QList<qlonglong> Numbers(const QString& out, const QString& key) {
  for (const QString& line : out.split('\n')) {
    if (line.startsWith(key + " ")) {
      QList<qlonglong> n;
      for (const QString& part : line.mid(key.size() + 1).split(' ')) {
        bool ok = false;
        const qlonglong v = part.toLongLong(&ok);
        if (!ok) break;
        n << v;
      }
      return n;
    }
  }
  return {};
}

}  // namespace

class ScreenshotTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void BoxIsDrawnWhereTheModelSaysIt();
  void WholeTraceRendersEveryHost();
  void DemoRenderingShowsEveryRank();
  void DamagedCaptureRendersWithItsWarning();
  void BadCommandLinesExitWithTwo();

 private:
  std::string dir_;
  std::string session_;
};

void ScreenshotTest::initTestCase() {
  dir_ = testing::TempDir("app_shot");
  session_ = testing::WriteAppTestCapture(dir_);
}

void ScreenshotTest::BoxIsDrawnWhereTheModelSaysIt() {
  const QString out_png = QString::fromStdString(dir_ + "/zoomed.png");
  // 300 ms to 700 ms after the first event: the landmark spans 40% of it.
  const Run r =
      RunViewer({"--screenshot", out_png, "--range", "300ms:700ms", "--size",
                 "1400x900", "--verbose", QString::fromStdString(session_)});
  QVERIFY2(r.exit_code == 0, qPrintable(r.err));
  QImage image(out_png);
  QVERIFY(!image.isNull());
  QCOMPARE(image.size(), QSize(1400, 900));

  const auto plot = Numbers(r.out, "timeline.plot");
  const auto window = Numbers(r.out, "timeline.window");
  const auto origin = Numbers(r.out, "timeline.origin");
  QCOMPARE(plot.size(), 4);
  QCOMPARE(window.size(), 2);
  QCOMPARE(origin.size(), 1);
  QCOMPARE(window[0], origin[0] + 300'000'000);
  QCOMPARE(window[1], origin[0] + 700'000'000);
  // The landmark track's first lane.
  int lane_top = -1;
  for (const QString& line : r.out.split('\n')) {
    if (line.startsWith("track ") && line.endsWith("landmarks")) {
      lane_top = line.split(' ')[2].toInt();
    }
  }
  QVERIFY2(lane_top > 0, qPrintable(r.out));

  // Where the model says the landmark is: its start and end on the store's
  // (aligned) clock, mapped through the window onto the plot.
  auto store = TraceStore::Open(session_);
  QVERIFY(store.ok());
  const auto name = (*store)->FindString("landmark");
  QVERIFY(name.has_value());
  int64_t start = -1, duration = 0;
  for (TrackId t = 0; t < (*store)->tracks().size(); ++t) {
    const SliceColumns& s = (*store)->data(t).slices;
    for (uint32_t i = 0; i < s.size(); ++i) {
      if (s.name(i) == *name) start = s.start(i), duration = s.duration(i);
    }
  }
  QCOMPARE(duration, testing::kLandmarkDuration);
  const double span = static_cast<double>(window[1] - window[0]);
  const double x0 = plot[0] + (start - window[0]) * plot[2] / span;
  const double x1 = plot[0] + (start + duration - window[0]) * plot[2] / span;
  QVERIFY(x1 - x0 > 200);
  const QRgb box = 0xFF000000u | NameColorRgb("landmark");
  const QRgb background = qRgb(255, 255, 255);
  const int y = lane_top + 1;  // above the label's glyphs
  auto at = [&](double x) { return image.pixel(static_cast<int>(x), y); };
  // Inside the box, all along: the name's colour.
  for (double x = x0 + 2; x < x1 - 2; x += 7) {
    QVERIFY2(at(x) == box, qPrintable(QString("x=%1: %2, expected %3")
                                          .arg(x)
                                          .arg(at(x), 8, 16)
                                          .arg(box, 8, 16)));
  }
  // Just outside its edges, and in the plot left of it: background (the
  // faint grid lines aside).
  auto is_background = [&](double x) {
    const QRgb c = at(x);
    return c == background ||
           (qRed(c) > 230 && qGreen(c) > 230 && qBlue(c) > 230 && c != box);
  };
  QVERIFY(is_background(x0 - 3));
  QVERIFY(is_background(x1 + 3));
  QVERIFY(is_background((plot[0] + x0) / 2));
  // The box starts within a pixel of where the model puts it.
  QVERIFY(at(x0 + 1) == box);
  QVERIFY(at(x0 - 1.5) != box);
  QVERIFY(at(x1 - 2) == box);
  QVERIFY(at(x1 + 1.5) != box);
}

void ScreenshotTest::WholeTraceRendersEveryHost() {
  const QString out_png = QString::fromStdString(dir_ + "/whole.png");
  const Run r = RunViewer(
      {"--screenshot", out_png, "--verbose", QString::fromStdString(session_)});
  QVERIFY2(r.exit_code == 0, qPrintable(r.err));
  QImage image(out_png);
  QCOMPARE(image.size(), QSize(1600, 1000));
  QVERIFY(r.out.contains("hostA › pid 100 (process 0) › main"));
  QVERIFY(!r.out.contains("banner"));
  // The main track of hostA has slices across the plot: many non-white
  // pixels along its first lane.
  const auto plot = Numbers(r.out, "timeline.plot");
  int lane_top = -1;
  for (const QString& line : r.out.split('\n')) {
    if (line.startsWith("track ") &&
        line.endsWith("hostA › pid 100 (process 0) › main")) {
      lane_top = line.split(' ')[2].toInt();
    }
  }
  QVERIFY(lane_top > 0);
  int painted = 0;
  for (int x = plot[0]; x < plot[0] + plot[2]; ++x) {
    const QRgb c = image.pixel(x, lane_top + 8);
    painted += qRed(c) < 235 || qGreen(c) < 235 || qBlue(c) < 235;
  }
  QVERIFY2(painted > plot[2] / 2, qPrintable(QString::number(painted)));
}

// What examples/run-demo renders for the README (timeline.png, 1600x900):
// a job of three ranks on one host, every rank's main thread and device
// stream drawn inside the plot.
void ScreenshotTest::DemoRenderingShowsEveryRank() {
  const std::string session =
      testing::WriteRankSession(testing::TempDir("app_shot_ranks"), 3, 12);
  const QString out_png = QString::fromStdString(dir_ + "/ranks.png");
  const Run r = RunViewer({"--screenshot", out_png, "--size", "1600x900",
                           "--verbose", QString::fromStdString(session)});
  QVERIFY2(r.exit_code == 0, qPrintable(r.err));
  QImage image(out_png);
  QCOMPARE(image.size(), QSize(1600, 900));
  const auto plot = Numbers(r.out, "timeline.plot");
  QCOMPARE(plot.size(), 4);
  for (int rank = 0; rank < 3; ++rank) {
    const QString process =
        QStringLiteral("vm › pid %1 (process %2) › ").arg(200 + rank).arg(rank);
    for (const QString& track :
         {QStringLiteral("main"), QStringLiteral("device 0 stream")}) {
      int top = -1, lane = 0;
      for (const QString& line : r.out.split('\n')) {
        if (line.startsWith("track ") && line.endsWith(process + track)) {
          top = line.split(' ')[2].toInt();
          lane = line.split(' ')[3].toInt();
        }
      }
      QVERIFY2(top >= plot[1] && top + lane <= plot[1] + plot[3],
               qPrintable(process + track + "\n" + r.out));
      // Its first lane is drawn: steps (or kernels) all along the plot.
      int painted = 0;
      for (int x = plot[0]; x < plot[0] + plot[2]; ++x) {
        const QRgb c = image.pixel(x, top + lane / 2);
        painted += qRed(c) < 235 || qGreen(c) < 235 || qBlue(c) < 235;
      }
      QVERIFY2(painted > plot[2] / 3,
               qPrintable(process + track + ": " + QString::number(painted)));
    }
  }
}

void ScreenshotTest::DamagedCaptureRendersWithItsWarning() {
  const std::string dir = testing::TempDir("app_shot_bad") + "/s";
  std::filesystem::create_directories(dir);
  testing::WriteAppTestHost(dir + "/hostA.100.podtrace", 0);
  testing::WriteAppTestHost(dir + "/hostB.101.podtrace", 1);
  std::ofstream(dir + "/hostC.102.podtrace") << "not a trace";
  const QString out_png = QString::fromStdString(dir + "/bad.png");
  const Run r = RunViewer(
      {"--screenshot", out_png, "--verbose", QString::fromStdString(dir)});
  QVERIFY2(r.exit_code == 0, qPrintable(r.err));
  QVERIFY(r.out.contains("banner "));
  QVERIFY(r.out.contains("hostC.102.podtrace could not be read"));
  QVERIFY(QImage(out_png).size() == QSize(1600, 1000));
  // Nothing readable: exit 1 with the reason.
  const std::string only_bad = testing::TempDir("app_shot_none");
  std::ofstream(only_bad + "/x.1.podtrace") << "garbage";
  const Run none =
      RunViewer({"--screenshot", out_png, QString::fromStdString(only_bad)});
  QCOMPARE(none.exit_code, 1);
  QVERIFY(none.err.contains("no trace file could be read"));
}

void ScreenshotTest::BadCommandLinesExitWithTwo() {
  const QString out_png = QString::fromStdString(dir_ + "/x.png");
  const QString path = QString::fromStdString(session_);
  struct Case {
    QStringList args;
    QString says;
  };
  const Case cases[] = {
      {{"--bogus", path}, "unknown flag '--bogus'"},
      {{"--screenshot", out_png, "--size", "wide", path}, "--size"},
      {{"--screenshot", out_png, "--range", "1:2", path}, "needs a unit"},
      {{"--screenshot", out_png, "--range", "5ms:1ms", path},
       "after the start"},
      {{"--screenshot", out_png}, "needs a trace"},
      {{"--screenshot"}, "needs a value"},
  };
  for (const Case& c : cases) {
    const Run r = RunViewer(c.args);
    QVERIFY2(r.exit_code == 2, qPrintable(c.args.join(' ') + ": " + r.err));
    QVERIFY2(r.err.contains(c.says), qPrintable(r.err));
  }
  const Run help = RunViewer({"--help"});
  QCOMPARE(help.exit_code, 0);
  QVERIFY(help.out.contains("--screenshot OUT.png"));
}

}  // namespace podscope::viewer::app

QTEST_GUILESS_MAIN(podscope::viewer::app::ScreenshotTest)
#include "screenshot_test.moc"
