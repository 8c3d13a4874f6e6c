// A job doctor's dump folder in the viewer and in `podscope analyze`: a
// real three-rank job under `podscope launch` (the doctor tests' worker)
// whose rank 1 is held in train_step > data_loading > read_batch while
// ranks 0 and 2 wait in all-reduce #3. Every rank writes its journal and
// its flight recorder's last seconds into the doctor folder; the real main
// window opens that folder, shows the verdict in its banner and marks the
// collective on ranks 0 and 2 and the scope on rank 1; clicking the
// verdict zooms to the marks. A damaged journal is named, and the traces
// still open.
#include "podscope/viewer/doctor_dump.h"

#include <QLabel>
#include <QStandardPaths>
#include <QtTest>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../../common/test_process.h"
#include "main_window.h"
#include "render_context.h"
#include "timeline_widget.h"
#include "trace_gen.h"

namespace podscope::viewer::app {
namespace {

namespace fs = std::filesystem;

const std::string kPodscope = PODSCOPE_BIN;
const std::string kWorker = DIST_WORKER;

int CountFiles(const std::string& dir, std::string_view suffix) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    n += e.path().string().ends_with(suffix);
  }
  return n;
}

// Runs the held job until every rank has dumped, then lets it finish.
// Returns the doctor folder, or "" with the job's output in *log.
std::string RunStalledJob(const std::string& root, std::string* log) {
  const std::string doctor = root + "/doctor";
  const std::string release = root + "/release";
  podscope::testing::TestProcess launcher(
      {kPodscope, "launch", "--nproc_per_node", "3", "--grace_ms", "2000",
       kWorker, "doctor", "--victim", "1", "--steps", "4", "--scenario", "hold",
       "--release", release, "--logdir", root + "/logs"},
      {"PODSCOPE_STALL_AFTER_MS=1500", "PODSCOPE_HEARTBEAT_INTERVAL_MS=200",
       "PODSCOPE_DOCTOR_DIR=" + doctor},
      {.merge_stderr = true});
  // The dumps are written when the verdict reaches each rank; rank 1 is
  // held until all three are there. Reading the launcher's output keeps
  // its pipe from filling meanwhile.
  std::string line;
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while ((CountFiles(doctor, ".journal.json") < 3 ||
          CountFiles(doctor, ".podtrace") < 3) &&
         std::chrono::steady_clock::now() < give_up) {
    launcher.ReadLine(&line, 50);
  }
  std::ofstream(release).put('\n');
  const int status = launcher.Wait(60000);
  *log = launcher.output();
  if (status != 0 || CountFiles(doctor, ".journal.json") != 3 ||
      CountFiles(doctor, ".podtrace") != 3) {
    return "";
  }
  return doctor;
}

std::string RunCommand(const std::string& command, int* status) {
  std::string out;
  std::FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

void Open(MainWindow& w, const std::string& path) {
  w.resize(1600, 1000);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  w.OpenPath(QString::fromStdString(path));
  QVERIFY(w.WaitUntilIdle(60000));
  QVERIFY(w.store() != nullptr);
}

int RankOf(const TraceStore& store, ProcessId p) {
  return store.processes()[p].process_index;
}

}  // namespace

class DoctorDumpTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    root_ = testing::TempDir("doctor_dump");
    std::string log;
    dump_ = RunStalledJob(root_, &log);
    QVERIFY2(!dump_.empty(), log.c_str());
  }

  void DumpFolderShowsTheVerdictAndMarksTheRanks() {
    MainWindow w;
    Open(w, dump_);
    const TraceStore& store = *w.store();
    QCOMPARE(store.processes().size(), size_t{3});
    QVERIFY2(w.banner_text().contains("Job doctor (stalled)"),
             qPrintable(w.banner_text()));
    QVERIFY2(w.banner_text().contains(
                 "all_reduce #3 of group world (f32 x 1024, sum) has waited"),
             qPrintable(w.banner_text()));
    QVERIFY(w.banner_text().contains("href=\"doctor:verdict\""));
    TimelineWidget* t = w.timeline();
    // Ranks 0 and 2 are in all-reduce #3; rank 1 is where it was held.
    std::map<int, std::vector<const DoctorMark*>> by_rank;
    for (const DoctorMark& m : t->doctor_marks()) {
      QCOMPARE(static_cast<int64_t>(RankOf(store, m.process)), m.rank);
      by_rank[static_cast<int>(m.rank)].push_back(&m);
    }
    QCOMPARE(by_rank.size(), size_t{3});
    for (int rank : {0, 2}) {
      QCOMPARE(by_rank[rank].size(), size_t{1});
      const DoctorMark& m = *by_rank[rank][0];
      QCOMPARE(m.kind, DoctorMarkKind::kCollective);
      QVERIFY2(m.label.starts_with("all_reduce #3 of world: waiting for "),
               m.label.c_str());
      QVERIFY2(m.label.ends_with("from train_step > backward > grad_sync"),
               m.label.c_str());
      // On the thread that issued it, and beyond the slices it recorded
      // before (the all-reduce before it ended first).
      QVERIFY(m.track.has_value());
      QCOMPARE(store.tracks()[*m.track].tid, store.processes()[m.process].pid);
      QVERIFY(m.end_ns - m.start_ns >= 1'000'000'000);
      // Within the dump's window, on the store's clock; the wait itself
      // had not ended, so it runs past every recorded event.
      QVERIFY(m.start_ns >= store.first_ns());
      QVERIFY(m.start_ns <= store.last_ns() + 1'000'000'000);
      QVERIFY(m.end_ns > store.last_ns());
    }
    QCOMPARE(by_rank[1].size(), size_t{1});
    const DoctorMark& where = *by_rank[1][0];
    QCOMPARE(where.kind, DoctorMarkKind::kWhere);
    QVERIFY2(where.label.starts_with(
                 "in train_step > data_loading > read_batch for "),
             where.label.c_str());
    QVERIFY(where.end_ns - where.start_ns >= 1'000'000'000);
    // Rank 1 entered read_batch before the others entered all-reduce #3
    // (no later than a heartbeat's clock error after).
    QVERIFY(where.start_ns <= by_rank[0][0]->start_ns + 100'000'000);

    // The whole view holds the marks; clicking the verdict zooms to them.
    t->FitAll();
    QVERIFY(t->axis().t1() >= w.doctor()->span()->second);
    t->SetWindow(store.first_ns(), store.first_ns() + 1'000'000);
    auto* banner = w.findChild<QLabel*>("banner.text");
    QVERIFY(banner != nullptr);
    emit banner->linkActivated("doctor:verdict");
    const auto span = w.doctor()->span();
    QVERIFY(span.has_value());
    QVERIFY(t->axis().t0() <= span->first && t->axis().t1() >= span->second);
    QVERIFY(t->axis().t1() - t->axis().t0() <=
            (span->second - span->first) * 13 / 10);

    // On screen: rank 0's process row carries the wait's colour inside
    // the mark, rank 1's the scope's.
    const QImage image = t->grab().toImage();
    const QRect plot = t->PlotRect();
    auto colour_on_row = [&](ProcessId process, const DoctorMark& m) {
      for (const LayoutRow& row : t->layout().rows()) {
        if (row.kind != RowKind::kProcess || row.process != process) continue;
        const int y = plot.y() + row.y - t->scroll_y() + row.height / 2;
        const int x =
            plot.x() +
            static_cast<int>(t->axis().TimeToX((m.start_ns + m.end_ns) / 2));
        return QColor(image.pixel(x, y));
      }
      return QColor();
    };
    auto near = [](const QColor& a, const QColor& b) {
      return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) +
                 std::abs(a.blue() - b.blue()) <
             90;
    };
    const QColor wait = colour_on_row(by_rank[0][0]->process, *by_rank[0][0]);
    QVERIFY2(near(wait, render::kDoctorWait), qPrintable(wait.name()));
    const QColor held = colour_on_row(where.process, where);
    QVERIFY2(near(held, render::kDoctorWhere), qPrintable(held.name()));
  }

  void AnalyzePrintsTheVerdictFirst() {
    int status = -1;
    const std::string out =
        RunCommand(kPodscope + " analyze " + dump_ + " 2>&1", &status);
    QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, out.c_str());
    QVERIFY2(out.starts_with("Job doctor: stalled (3 journals)\n  all_reduce "
                             "#3 of group world (f32 x 1024, sum) has waited "),
             out.c_str());
    QVERIFY2(out.find("rank 1 at ") != std::string::npos &&
                 out.find(": in train_step > data_loading > read_batch for ") !=
                     std::string::npos,
             out.c_str());
    QVERIFY2(
        out.find(": all_reduce #3 of world: waiting for ") != std::string::npos,
        out.c_str());
    // --json: the same in a "doctor" member.
    const std::string json =
        RunCommand(kPodscope + " analyze --json " + dump_, &status);
    QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, json.c_str());
    QVERIFY2(json.find("\"doctor\": {\"verdict\": \"stalled\", \"sentence\": "
                       "\"all_reduce #3 of group world") != std::string::npos,
             json.c_str());
    QVERIFY2(
        json.find("{\"kind\": \"where\", \"rank\": 1, ") != std::string::npos,
        json.c_str());
  }

  // A journal cut short (a copy that did not finish, a full disk): the
  // banner names the file and why, the traces are all shown, and the
  // other journals still give the verdict.
  void TruncatedJournalIsNamedAndTheTracesStillOpen() {
    const std::string copy = root_ + "/damaged";
    fs::remove_all(copy);
    fs::copy(dump_, copy);
    std::string victim;
    for (const auto& e : fs::directory_iterator(copy)) {
      if (e.path().string().ends_with(".journal.json") && victim.empty()) {
        victim = e.path().string();
      }
    }
    fs::resize_file(victim, fs::file_size(victim) / 2);
    const std::string name = fs::path(victim).filename().string();
    MainWindow w;
    Open(w, copy);
    QCOMPARE(w.store()->processes().size(), size_t{3});
    const QString banner = w.banner_text();
    QVERIFY2(banner.contains(QString::fromStdString(name)) &&
                 banner.contains("not a complete JSON journal"),
             qPrintable(banner));
    QVERIFY2(banner.contains("Job doctor (stalled)"), qPrintable(banner));

    int status = -1;
    const std::string out =
        RunCommand(kPodscope + " analyze " + copy + " 2>&1", &status);
    QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, out.c_str());
    QVERIFY2(out.find("warning: " + victim + ": not a complete JSON journal") !=
                 std::string::npos,
             out.c_str());
    QVERIFY2(out.find("Job doctor: stalled (2 journals)") != std::string::npos,
             out.c_str());
  }

 private:
  std::string root_;
  std::string dump_;
};

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::DoctorDumpTest)
#include "doctor_dump_test.moc"
