// File › Capture… against a real profiler server started in this process
// (podscope::profiler::StartServer on a free loopback port) while a thread
// records scopes: the dialog captures, shows progress, opens the session in
// the main window, reports a worker that cannot be reached, and Cancel
// stops a long capture early with a readable file.
#include "capture_dialog.h"

#include <unistd.h>

#include <QAbstractButton>
#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QStatusBar>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "main_window.h"
#include "podscope/job/coordination.h"
#include "podscope/job/keys.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/trace.h"
#include "xprof_test_server.h"

namespace podscope::viewer::app {
namespace {

namespace fs = std::filesystem;

// Records a "dialog_work" scope every 200 us until destroyed.
class Workload {
 public:
  Workload()
      : thread_([this] {
          while (!stop_.load()) {
            PODSCOPE_TRACE("dialog_work");
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

QString FreshLogdir(const char* name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir =
      fs::path(tmp ? tmp : "/tmp") / ("capture_dialog_" + std::string(name));
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

}  // namespace

class CaptureDialogTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    auto server = profiler::StartServer(0);
    QVERIFY2(server.ok(), std::string(server.status().message()).c_str());
    server_ = *std::move(server);
    work_ = std::make_unique<Workload>();
  }
  void cleanupTestCase() {
    work_.reset();
    server_.reset();
  }

  void parsesWorkerLists() {
    QCOMPARE(ParseWorkerList(QStringLiteral(" a:1, b:2 ,,")),
             QStringList({QStringLiteral("a:1"), QStringLiteral("b:2")}));
    QVERIFY(ParseWorkerList(QStringLiteral(" , ")).isEmpty());
  }

  void capturesAndOpensTheSession() {
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    CaptureDialog* d = w.ShowCaptureDialog();
    QVERIFY(d->isVisible());
    QCOMPARE(d->workers_edit()->text(), QStringLiteral("localhost:9012"));
    d->workers_edit()->setText(QString::fromStdString(server_->address()));
    d->duration_edit()->setValue(600);
    const QString logdir = FreshLogdir("ok");
    d->logdir_edit()->setText(logdir);
    d->session_edit()->setText(QStringLiteral("from-dialog"));
    QSignalSpy captured(d, &CaptureDialog::captured);
    QSignalSpy loaded(&w, &MainWindow::loaded);
    QTest::mouseClick(d->start_button(), Qt::LeftButton);
    QVERIFY(d->running());
    QVERIFY(!d->start_button()->isEnabled());
    QCOMPARE(d->cancel_button()->text(), QStringLiteral("Cancel"));
    // Progress while it records.
    QVERIFY(
        WaitFor([&] { return d->status_text().contains("recording"); }, 10000));
    QVERIFY(WaitFor([&] { return captured.count() == 1; }, 30000));
    const QString dir = captured.at(0).at(0).toString();
    QCOMPARE(dir, logdir + "/from-dialog");
    QVERIFY(fs::exists((dir + "/manifest.json").toStdString()));
    QVERIFY(!d->running());
    // All went well: the dialog closed itself.
    QVERIFY(!d->isVisible());
    QVERIFY(d->errors_text().isEmpty());
    QVERIFY(WaitFor([&] { return loaded.count() >= 1; }, 30000));
    QCOMPARE(loaded.last().at(0).toBool(), true);
    QVERIFY(w.store() != nullptr);
    QVERIFY(w.store()->FindString("dialog_work").has_value());
    QVERIFY(w.store()->event_count() > 100);
  }

  void namesAWorkerThatCannotBeReached() {
    MainWindow w;
    w.show();
    CaptureDialog* d = w.ShowCaptureDialog();
    // A port nothing listens on (the server's, once it is gone, could be
    // reused; 1 is never ours) next to the real server.
    d->workers_edit()->setText(QString::fromStdString(server_->address()) +
                               ", 127.0.0.1:1");
    d->duration_edit()->setValue(300);
    d->logdir_edit()->setText(FreshLogdir("partial"));
    d->session_edit()->setText(QStringLiteral("one-missing"));
    QSignalSpy finished(d, &CaptureDialog::finishedCapture);
    QSignalSpy captured(d, &CaptureDialog::captured);
    d->StartCapture();
    QVERIFY(WaitFor([&] { return finished.count() == 1; }, 30000));
    QCOMPARE(captured.count(), 1);  // the reachable worker's file opens
    QVERIFY(d->isVisible());        // and the error stays readable
    QVERIFY2(d->errors_text().contains("127.0.0.1:1"),
             qPrintable(d->errors_text()));
    QVERIFY(d->status_text().contains("1 of 2"));
    QVERIFY(w.WaitUntilIdle(30000));
  }

  // A mixed list: each address says which protocol it speaks as it is
  // typed, XProf's tracer levels appear because one worker speaks it, and
  // the levels chosen reach that worker's Profile request; the session
  // holds both workers' files and the dialog says how the XProf host was
  // lined up.
  void findsEachProtocolAndCapturesXProfWorkers() {
    profiler::testing::XProfHostOptions xo;
    xo.host_name = "tpu-host-7";
    profiler::testing::XProfTestServer xprof(xo);
    QVERIFY(xprof.ok());
    MainWindow w;
    w.show();
    CaptureDialog* d = w.ShowCaptureDialog();
    QVERIFY(!d->xprof_box()->isVisible());
    const QString podscope = QString::fromStdString(server_->address());
    const QString other = QString::fromStdString(xprof.address());
    const QString list = podscope + ", " + other;
    QSignalSpy found(d, &CaptureDialog::protocolsFound);
    d->workers_edit()->selectAll();
    QTest::keyClicks(d->workers_edit(), list);
    QVERIFY(WaitFor(
        [&] {
          return !found.isEmpty() &&
                 found.last().at(0).toStringList() == ParseWorkerList(list);
        },
        30000));
    const QString protocols = d->protocols_label()->text();
    QVERIFY(d->protocols_label()->isVisible());
    QVERIFY2(protocols.contains(podscope + ": Podscope ("),
             qPrintable(protocols));
    QVERIFY2(protocols.contains(QStringLiteral("pid %1").arg(getpid())),
             qPrintable(protocols));
    QVERIFY2(protocols.contains(other + ": XProf's profiler service"),
             qPrintable(protocols));
    QVERIFY(d->xprof_box()->isVisible());
    QVERIFY(xprof.requests().empty());  // finding out records nothing

    d->host_level_edit()->setCurrentIndex(3);
    d->device_level_edit()->setCurrentIndex(0);
    d->python_level_edit()->setCurrentIndex(1);
    d->align_edit()->setCurrentIndex(
        d->align_edit()->findData(QStringLiteral("rpc")));
    d->also_xplane_edit()->setChecked(true);
    d->duration_edit()->setValue(400);
    const QString logdir = FreshLogdir("mixed");
    d->logdir_edit()->setText(logdir);
    d->session_edit()->setText(QStringLiteral("mixed"));
    QSignalSpy captured(d, &CaptureDialog::captured);
    d->StartCapture();
    QVERIFY(!d->xprof_box()->isEnabled());
    QVERIFY(WaitFor([&] { return captured.count() == 1; }, 30000));
    const auto requests = xprof.requests();
    QCOMPARE(requests.size(), size_t{1});
    QCOMPARE(requests[0].opts().host_tracer_level(), 3u);
    QCOMPARE(requests[0].opts().device_tracer_level(), 0u);
    QCOMPARE(requests[0].opts().python_tracer_level(), 1u);
    QVERIFY(fs::exists((logdir + "/plugins/profile/mixed/tpu-host-7.xplane.pb")
                           .toStdString()));
    // Open, so that the line-up can be read.
    QVERIFY(d->isVisible());
    QVERIFY2(d->status_text().contains("2 of 2 workers recorded"),
             qPrintable(d->status_text()));
    QVERIFY2(d->status_text().contains("XProf hosts: tpu-host-7: lined up by "
                                       "rpc, ±"),
             qPrintable(d->status_text()));
    QFile manifest(logdir + "/mixed/manifest.json");
    QVERIFY(manifest.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(manifest.readAll());
    QVERIFY2(text.contains("\"protocol\": \"xprof\""), qPrintable(text));
    QVERIFY2(text.contains("\"protocol\": \"podscope\""), qPrintable(text));
    QVERIFY(w.WaitUntilIdle(30000));
    QVERIFY(w.store() != nullptr);
    QVERIFY(w.store()->FindString("dialog_work").has_value());
  }

  // A job's coordinator in place of the workers: the ranks it lists are
  // recorded and named in the manifest; a coordinator that is not there
  // is a clear error.
  void capturesEveryRankOfAJob() {
    job::CoordinatorOptions co;
    auto coordinator = job::StartCoordinator(co);
    QVERIFY2(coordinator.ok(),
             std::string(coordinator.status().message()).c_str());
    auto client =
        job::CoordinationClient::Create((*coordinator)->address(), "");
    QVERIFY(client.ok());
    // Only a registered rank may publish (here the job's only rank).
    QVERIFY((*client)
                ->Register(0, 1, "dialog-host", 4242, 1, absl::Seconds(10))
                .ok());
    QVERIFY((*client)
                ->Set(std::string(job::kProfilerKeyPrefix) + "0",
                      server_->address() + " dialog-host 4242")
                .ok());
    MainWindow w;
    w.show();
    CaptureDialog* d = w.ShowCaptureDialog();
    const QString job = QString::fromStdString((*coordinator)->address());
    d->job_radio()->setChecked(true);
    d->job_edit()->setText(job);
    d->duration_edit()->setValue(400);
    const QString logdir = FreshLogdir("job");
    d->logdir_edit()->setText(logdir);
    d->session_edit()->setText(QStringLiteral("by-job"));
    QSignalSpy captured(d, &CaptureDialog::captured);
    d->StartCapture();
    QVERIFY(WaitFor([&] { return captured.count() == 1; }, 30000));
    QFile manifest(logdir + "/by-job/manifest.json");
    QVERIFY(manifest.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(manifest.readAll());
    QVERIFY2(text.contains("\"job\": \"" + job + "\""), qPrintable(text));
    QVERIFY2(text.contains("{\"rank\": 0, \"address\": \"" +
                           QString::fromStdString(server_->address())),
             qPrintable(text));
    QVERIFY(w.WaitUntilIdle(30000));

    // A job nobody coordinates.
    (*coordinator)->Stop();
    CaptureDialog gone;
    gone.job_radio()->setChecked(true);
    gone.job_edit()->setText(job);
    gone.logdir_edit()->setText(FreshLogdir("job-gone"));
    QSignalSpy finished(&gone, &CaptureDialog::finishedCapture);
    gone.StartCapture();
    QVERIFY(WaitFor([&] { return finished.count() == 1; }, 60000));
    QVERIFY2(gone.status_text().contains("job " + job),
             qPrintable(gone.status_text()));
  }

  // The form: no "&" in any label, Workers and Job an either/or whose
  // buttons enable their fields, no progress bar before a capture. A
  // capture in which every worker failed says it failed, shows no full
  // bar, leaves no session folder, and the window stops saying it waits
  // for trace files.
  void formIsAnEitherOrAndAFailedCaptureSaysSo() {
    MainWindow w;
    w.show();
    CaptureDialog* d = w.ShowCaptureDialog();
    for (const QLabel* l : d->findChildren<QLabel*>()) {
      QVERIFY2(!l->text().contains('&'), qPrintable(l->text()));
    }
    for (const QAbstractButton* b : d->findChildren<QAbstractButton*>()) {
      QVERIFY2(!b->text().contains('&'), qPrintable(b->text()));
    }
    QVERIFY(d->workers_radio()->isVisible());
    QVERIFY(d->job_radio()->isVisible());
    QVERIFY(d->workers_radio()->isChecked());
    QVERIFY(d->workers_edit()->isEnabled());
    QVERIFY(!d->job_edit()->isEnabled());
    QVERIFY(!d->progress_bar()->isVisible());
    QTest::mouseClick(d->job_radio(), Qt::LeftButton);
    QVERIFY(d->job_radio()->isChecked());
    QVERIFY(!d->workers_edit()->isEnabled());
    QVERIFY(d->job_edit()->isEnabled());
    d->job_edit()->setText(QStringLiteral("127.0.0.1:2"));
    QVERIFY(d->fields().workers.isEmpty());
    QCOMPARE(d->fields().job, QStringLiteral("127.0.0.1:2"));
    QTest::mouseClick(d->workers_radio(), Qt::LeftButton);
    QVERIFY(d->fields().job.isEmpty());

    d->workers_edit()->setText(QStringLiteral("127.0.0.1:1"));
    d->duration_edit()->setValue(200);
    const QString logdir = FreshLogdir("all-failed");
    d->logdir_edit()->setText(logdir);
    d->session_edit()->setText(QStringLiteral("nothing"));
    QSignalSpy finished(d, &CaptureDialog::finishedCapture);
    d->StartCapture();
    QVERIFY(d->progress_bar()->isVisible());
    QVERIFY(WaitFor([&] { return finished.count() == 1; }, 30000));
    QCOMPARE(finished.last().at(0).toBool(), false);
    QCOMPARE(d->status_text(),
             QStringLiteral("Capture failed: the worker could not be "
                            "recorded; no session was written."));
    QVERIFY(!d->progress_bar()->isVisible() ||
            d->progress_bar()->value() < d->progress_bar()->maximum());
    QVERIFY(d->isVisible());
    QVERIFY2(d->errors_text().contains("127.0.0.1:1"),
             qPrintable(d->errors_text()));
    QVERIFY2(!fs::exists(fs::path(logdir.toStdString()) / "nothing"),
             "a session folder was left");
    d->CancelOrClose();
    QVERIFY(!d->isVisible());
    for (const QLabel* l : w.statusBar()->findChildren<QLabel*>()) {
      QVERIFY2(!l->text().contains("waiting for trace files"),
               qPrintable(l->text()));
    }
  }

  void refusesAnEmptyForm() {
    CaptureDialog d;
    d.workers_edit()->setText(QStringLiteral(" , "));
    d.StartCapture();
    QVERIFY(!d.running());
    QVERIFY(d.status_text().contains("worker"));
  }

  void cancelStopsALongCaptureAndOpensIt() {
    MainWindow w;
    w.show();
    CaptureDialog* d = w.ShowCaptureDialog();
    d->workers_edit()->setText(QString::fromStdString(server_->address()));
    d->duration_edit()->setValue(600'000);
    d->logdir_edit()->setText(FreshLogdir("cancel"));
    d->session_edit()->setText(QStringLiteral("cancelled"));
    QSignalSpy captured(d, &CaptureDialog::captured);
    QSignalSpy loaded(&w, &MainWindow::loaded);
    QElapsedTimer timer;
    timer.start();
    d->StartCapture();
    QVERIFY(WaitFor(
        [&] {
          return d->status_text().contains(
              "1 of 1 workers "
              "recording");
        },
        10000));
    QTest::qWait(300);
    QTest::mouseClick(d->cancel_button(), Qt::LeftButton);
    QVERIFY(d->isVisible());  // Cancel stops the capture, not the dialog
    QVERIFY(WaitFor([&] { return captured.count() == 1; }, 30000));
    QVERIFY(timer.elapsed() < 30000);
    QVERIFY(d->status_text().startsWith("Cancelled"));
    QVERIFY(WaitFor([&] { return loaded.count() >= 1; }, 30000));
    QCOMPARE(loaded.last().at(0).toBool(), true);
    QVERIFY(w.store()->FindString("dialog_work").has_value());
    // The file was finished: no load problems.
    QVERIFY(w.store()->problems().empty());
    // Now Cancel closes the dialog.
    QCOMPARE(d->cancel_button()->text(), QStringLiteral("Close"));
    QTest::mouseClick(d->cancel_button(), Qt::LeftButton);
    QVERIFY(!d->isVisible());
  }

  void closingTheWindowWhileRecordingStopsTheCapture() {
    auto w = std::make_unique<MainWindow>();
    CaptureDialog* d = w->ShowCaptureDialog();
    d->workers_edit()->setText(QString::fromStdString(server_->address()));
    d->duration_edit()->setValue(600'000);
    d->logdir_edit()->setText(FreshLogdir("closed"));
    d->StartCapture();
    QVERIFY(
        WaitFor([&] { return d->status_text().contains("recording"); }, 10000));
    QElapsedTimer timer;
    timer.start();
    w.reset();  // the dialog's destructor cancels and waits
    QVERIFY(timer.elapsed() < 30000);
  }

 private:
  std::unique_ptr<profiler::ProfilerServer> server_;
  std::unique_ptr<Workload> work_;
};

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::CaptureDialogTest)
#include "capture_dialog_test.moc"
