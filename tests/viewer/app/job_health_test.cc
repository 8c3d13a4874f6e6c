// The Pod panel's "Job health" tab on a live job: a real three-rank job
// under `podscope launch` (the doctor tests' worker) whose rank 1 is held
// in train_step > data_loading > read_batch at step 2 while the others
// wait in all-reduce #3. The tab reads the job's coordinator as `podscope
// doctor` does: first every rank with its heartbeat, then the stall
// verdict with where each rank is; a job capture started from File ›
// Capture… watches it while the capture runs.
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QtTest>
#include <fstream>
#include <string>

#include "../../common/test_process.h"
#include "capture_dialog.h"
#include "job_doctor_view.h"
#include "main_window.h"
#include "pod_panel.h"
#include "trace_gen.h"

namespace podscope::viewer::app {
namespace {

const std::string kPodscope = PODSCOPE_BIN;
const std::string kWorker = DIST_WORKER;

QString Cell(QTableWidget* t, int row, int column) {
  const QTableWidgetItem* item = t->item(row, column);
  return item == nullptr ? QString() : item->text();
}

// Every rank is in the table with a heartbeat.
bool AllRanksListed(QTableWidget* t) {
  if (t->rowCount() != 3) return false;
  for (int r = 0; r < 3; ++r) {
    if (Cell(t, r, 0) != QString::number(r)) return false;
    if (!Cell(t, r, 4).endsWith(" s ago")) return false;
  }
  return true;
}

}  // namespace

class JobHealthTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    root_ = testing::TempDir("job_health");
  }

  void PodPanelShowsALiveJobsRanksThenItsVerdict() {
    const std::string release = root_ + "/release";
    podscope::testing::TestProcess launcher(
        {kPodscope, "launch", "--nproc_per_node", "3", "--grace_ms", "2000",
         kWorker, "doctor", "--victim", "1", "--steps", "4", "--scenario",
         "hold", "--release", release, "--logdir", root_ + "/logs"},
        {"PODSCOPE_STALL_AFTER_MS=1500", "PODSCOPE_HEARTBEAT_INTERVAL_MS=200"},
        {.merge_stderr = true});
    std::string line, coordinator;
    const std::string mark = "[rank 0] coordinator ";
    while (coordinator.empty() && launcher.ReadLine(&line, 60000)) {
      if (line.rfind(mark, 0) == 0) coordinator = line.substr(mark.size());
    }
    QVERIFY2(!coordinator.empty(), launcher.output().c_str());

    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    JobDoctorView* health = w.pod()->job_doctor();
    QCOMPARE(w.pod()->tabs()->indexOf(health) >= 0, true);
    health->Watch(QString::fromStdString(coordinator), "", 200);
    QVERIFY(health->watching());
    QTableWidget* table = health->table();
    QTRY_VERIFY_WITH_TIMEOUT(AllRanksListed(table), 30000);
    // Then the stall, with where each rank is, refreshing meanwhile.
    const int before = health->refreshes();
    QTRY_VERIFY_WITH_TIMEOUT(
        health->verdict_label()->text().contains("3 ranks, stalled"), 30000);
    QVERIFY(health->refreshes() > before);
    const QString verdict = health->verdict_label()->text();
    QVERIFY2(verdict.contains("all_reduce #3 of group world (f32 x 1024, "
                              "sum) has waited"),
             qPrintable(verdict));
    QVERIFY2(verdict.contains("rank 1 has not"), qPrintable(verdict));
    QTRY_VERIFY_WITH_TIMEOUT(
        Cell(table, 0, 5).startsWith("in all_reduce #3 of world for ") &&
            Cell(table, 2, 5).startsWith("in all_reduce #3 of world for ") &&
            Cell(table, 1, 5) == "last all_reduce #2 of world",
        10000);
    QVERIFY2(Cell(table, 1, 6)
                 .startsWith("train_step > data_loading > read_batch for "),
             qPrintable(Cell(table, 1, 6)));
    QVERIFY2(
        Cell(table, 0, 6).startsWith("train_step > backward > grad_sync for "),
        qPrintable(Cell(table, 0, 6)));
    QVERIFY(!Cell(table, 1, 2).isEmpty() && Cell(table, 1, 2) != "-");

    // A capture of the job from File › Capture… watches it while it runs
    // and stops when it ends; the last state stays shown.
    health->StopWatching();
    CaptureDialog* dialog = w.ShowCaptureDialog();
    dialog->job_radio()->setChecked(true);
    dialog->job_edit()->setText(QString::fromStdString(coordinator));
    dialog->duration_edit()->setValue(1500);
    dialog->logdir_edit()->setText(QString::fromStdString(root_ + "/capture"));
    dialog->StartCapture();
    QVERIFY(dialog->running());
    QVERIFY(health->watching());
    QCOMPARE(health->address(), QString::fromStdString(coordinator));
    QCOMPARE(w.pod()->tabs()->currentWidget(), health);
    QTRY_VERIFY_WITH_TIMEOUT(!dialog->running(), 60000);
    QVERIFY(!health->watching());
    QVERIFY(health->verdict_label()->text().contains("3 ranks"));

    std::ofstream(release).put('\n');
    QCOMPARE(launcher.Wait(60000), 0);
  }

  // A coordinator that does not answer: the tab says so, naming it.
  void UnreachableCoordinatorIsNamed() {
    MainWindow w;
    JobDoctorView* health = w.pod()->job_doctor();
    health->Watch("127.0.0.1:1", "", 200);
    QTRY_VERIFY_WITH_TIMEOUT(health->refreshes() > 0, 20000);
    const QString text = health->verdict_label()->text();
    QVERIFY2(text.contains("The job's coordinator at 127.0.0.1:1 did not "
                           "answer") &&
                 text.contains("unreachable"),
             qPrintable(text));
    health->StopWatching();
  }

 private:
  std::string root_;
};

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::JobHealthTest)
#include "job_health_test.moc"
