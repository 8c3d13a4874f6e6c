// The live timeline with real processes: the main window follows a folder
// that child processes (live_trace_writer, recording with StartTrace) write
// into, and File › Capture… against a real profiler server shows events
// while the capture still runs.
#include <QAction>
#include <QLineEdit>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSpinBox>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "capture_dialog.h"
#include "cli_options.h"
#include "live_session.h"
#include "main_window.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/trace.h"
#include "timeline_widget.h"

namespace podscope::viewer::app {
namespace {

namespace fs = std::filesystem;

QString FreshDir(const char* name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir =
      fs::path(tmp ? tmp : "/tmp") /
      ("live_" + std::string(name) + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  return QString::fromStdString(dir.string());
}

bool WaitFor(const std::function<bool()>& done, int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (!done()) {
    if (timer.elapsed() > timeout_ms) return false;
    QTest::qWait(20);
  }
  return true;
}

// A child recording into `dir` for `duration_ms` after `delay_ms`.
std::unique_ptr<QProcess> StartWriter(const QString& dir, int duration_ms,
                                      int delay_ms) {
  auto p = std::make_unique<QProcess>();
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove("PODSCOPE_SESSION");  // the file goes straight into dir
  p->setProcessEnvironment(env);
  p->setProcessChannelMode(QProcess::ForwardedChannels);
  p->start(PODSCOPE_LIVE_TRACE_WRITER,
           {dir, QString::number(duration_ms), QString::number(delay_ms)});
  return p;
}

// Records a "live_work" scope every 200 us until destroyed.
class Workload {
 public:
  Workload()
      : thread_([this] {
          while (!stop_.load()) {
            PODSCOPE_TRACE("live_work");
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          }
        }) {}
  ~Workload() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

class LiveTest : public QObject {
  Q_OBJECT

 private slots:
  void parsesTheFollowFlag() {
    std::string error;
    auto ok = ParseCommandLine({"--follow", "/tmp/run"}, &error);
    QVERIFY(ok.has_value());
    QCOMPARE(ok->follow, std::string("/tmp/run"));
    QVERIFY(ok->path.empty());
    QVERIFY(!ParseCommandLine({"--follow"}, &error).has_value());
    QVERIFY(QString::fromStdString(error).contains("--follow needs a value"));
    QVERIFY(!ParseCommandLine({"--follow", "a", "b"}, &error).has_value());
    QVERIFY(QString::fromStdString(error).contains("give one"));
    QVERIFY(!ParseCommandLine({"--follow=a", "--screenshot", "x.png"}, &error)
                 .has_value());
    QVERIFY(QString::fromStdString(error).contains("--screenshot"));
    QVERIFY(QString::fromStdString(UsageText()).contains("--follow DIR"));
  }

  void followsAFolderWhileProcessesWriteIt() {
    const QString dir = FreshDir("follow");
    fs::create_directories(dir.toStdString());
    MainWindow w;
    w.resize(1400, 900);
    w.show();
    QSignalSpy loaded(&w, &MainWindow::loaded);
    auto first = StartWriter(dir, 4000, 0);
    // The second process starts recording later: a new file appears.
    auto second = StartWriter(dir, 1500, 1800);
    QVERIFY(first->waitForStarted(5000));
    QVERIFY(second->waitForStarted(5000));
    w.FollowPath(dir);
    QVERIFY(w.live() != nullptr);
    QVERIFY(WaitFor([&] { return loaded.count() >= 1; }, 10000));
    QVERIFY(w.store() != nullptr);
    TimelineWidget* t = w.timeline();
    QVERIFY(t->following());

    // The store grows across refreshes while the first process records,
    // and the right edge of the view stays on the newest time.
    uint64_t last = w.store()->event_count();
    int grew = 0;
    for (int i = 0; i < 40 && grew < 4; ++i) {
      QTest::qWait(LiveSession::kRefreshMs + 50);
      const uint64_t now = w.store()->event_count();
      if (now > last) ++grew;
      last = now;
      const TraceStore& s = *w.store();
      QVERIFY2(t->axis().t1() >= s.last_ns(),
               "the window's right edge is before the newest event");
      QVERIFY2(t->axis().t1() - s.last_ns() <= t->axis().span() / 10 + 1000,
               "the window's right edge is far past the newest event");
    }
    QVERIFY2(grew >= 4, "the store did not grow across refreshes");

    // The second process's file is added as a process of its own.
    QVERIFY(WaitFor([&] { return w.store()->processes().size() == 2; }, 10000));

    // Zooming in stops following: the window stays where the user put it.
    t->ZoomAt(t->axis().width() / 4.0, 8.0);
    const int64_t t0 = t->axis().t0(), t1 = t->axis().t1();
    const uint64_t before = w.store()->event_count();
    QVERIFY(WaitFor([&] { return w.store()->event_count() > before; }, 5000));
    QVERIFY(!t->following());
    QCOMPARE(t->axis().t0(), t0);
    QCOMPARE(t->axis().t1(), t1);
    QVERIFY(t->axis().t1() < w.store()->last_ns());

    QAction* follow = w.findChild<QAction*>("action.follow");
    QVERIFY(follow != nullptr);
    QVERIFY(!follow->isChecked());
    // End resumes following.
    t->setFocus();
    QTest::keyClick(t, Qt::Key_End);
    QVERIFY(t->following());
    QVERIFY(follow->isChecked());
    QVERIFY(t->axis().t1() >= w.store()->last_ns());

    // Once both processes stop, their files are final and the store holds
    // what loading the folder at once holds.
    QVERIFY(first->waitForFinished(20000));
    QVERIFY(second->waitForFinished(20000));
    QCOMPARE(first->exitCode(), 0);
    QCOMPARE(second->exitCode(), 0);
    QVERIFY(WaitFor([&] { return w.live()->follower().all_final(); }, 5000));
    QTest::qWait(LiveSession::kRefreshMs * 2);
    auto loaded_at_once = TraceStore::Open(dir.toStdString());
    QVERIFY(loaded_at_once.ok());
    QCOMPARE(w.store()->event_count(), (*loaded_at_once)->event_count());
    QCOMPARE(w.store()->tracks().size(), (*loaded_at_once)->tracks().size());
    QCOMPARE(w.store()->last_ns(), (*loaded_at_once)->last_ns());
    // With every file closed the background panels compute.
    QVERIFY(w.WaitUntilIdle(30000));
    QVERIFY(w.store()->FindString("forward").has_value());
  }

  void captureShowsEventsBeforeItEnds() {
    auto server = profiler::StartServer(0);
    QVERIFY2(server.ok(), std::string(server.status().message()).c_str());
    Workload work;
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    CaptureDialog* d = w.ShowCaptureDialog();
    d->workers_edit()->setText(QString::fromStdString((*server)->address()));
    d->duration_edit()->setValue(4000);
    const QString logdir = FreshDir("capture");
    d->logdir_edit()->setText(logdir);
    d->session_edit()->setText(QStringLiteral("live"));
    QSignalSpy captured(d, &CaptureDialog::captured);
    d->StartCapture();
    QVERIFY(d->running());
    // Events are on the timeline while the capture still records.
    QVERIFY2(WaitFor(
                 [&] {
                   return w.store() != nullptr &&
                          w.store()->FindString("live_work").has_value() &&
                          w.store()->event_count() > 50;
                 },
                 15000),
             "no events shown during the capture");
    QVERIFY(d->running());
    QCOMPARE(captured.count(), 0);
    QVERIFY(w.live() != nullptr);
    QCOMPARE(w.live()->path(), logdir + "/live");
    const uint64_t during = w.store()->event_count();
    QVERIFY(WaitFor([&] { return captured.count() == 1; }, 30000));
    // The capture ended: following stopped, the final files are shown.
    QVERIFY(w.live() == nullptr);
    QVERIFY(w.store()->event_count() > during);
    auto loaded_at_once = TraceStore::Open((logdir + "/live").toStdString());
    QVERIFY(loaded_at_once.ok());
    QCOMPARE(w.store()->event_count(), (*loaded_at_once)->event_count());
    QVERIFY(w.WaitUntilIdle(30000));
  }
};

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::LiveTest)
#include "live_test.moc"
