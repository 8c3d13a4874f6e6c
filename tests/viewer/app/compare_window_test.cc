// File › Compare… on two 2-rank sessions written with TraceWriter, the
// candidate's conv2d 50 % slower on rank 1: the real compare window shows
// the verdict and a row per figure, and a click on a row shows the same
// place in both timelines.
#include "compare_window.h"

#include <QLabel>
#include <QTableWidget>
#include <QtTest>
#include <cstdint>
#include <filesystem>
#include <string>

#include "main_window.h"
#include "podscope/trace_format/writer.h"
#include "timeline_widget.h"

namespace podscope::viewer::app {
namespace {

namespace fs = std::filesystem;
namespace tf = trace_format;

constexpr int kSteps = 14;

// Steps 10 ms apart; per step on each rank: `forward` on the main thread
// over `conv2d` (2 ms, `conv_scale` times that on rank 1) and `matmul`
// (1 ms) on the device stream, then an all_reduce that ends 200 µs after
// the last rank arrives. A small per-step jitter keeps the samples apart.
QString WriteSession(const std::string& name, double conv_scale) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") /
                       ("compare_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::unique_ptr<tf::TraceWriter> w[2];
  uint32_t main[2], dev[2];
  for (int r = 0; r < 2; ++r) {
    w[r] = *tf::TraceWriter::Create(
        (dir / ("node." + std::to_string(300 + r) + ".podtrace")).string());
    tf::proto::Metadata m;
    m.set_host("node");
    m.set_pid(300 + r);
    m.set_process_index(r);
    m.set_process_count(2);
    w[r]->SetMetadata(m);
    tf::proto::Track t;
    t.set_kind(tf::proto::TRACK_KIND_THREAD);
    t.set_name("main");
    main[r] = w[r]->AddTrack(t);
    t.set_kind(tf::proto::TRACK_KIND_DEVICE_STREAM);
    t.set_name("device 0 stream 1");
    t.set_device_id(0);
    t.set_stream_id(1);
    dev[r] = w[r]->AddTrack(t);
  }
  for (int s = 0; s < kSteps; ++s) {
    const int64_t t = 1'000'000 + s * 10'000'000;
    const int64_t jitter = (s * 37 % 7) * 10'000;
    int64_t arrive[2];
    for (int r = 0; r < 2; ++r) {
      tf::TraceWriter& x = *w[r];
      const int64_t conv = static_cast<int64_t>((2'000'000 + jitter) *
                                                (r == 1 ? conv_scale : 1));
      const int64_t mm = 1'000'000 + jitter;
      x.AddSlice(main[r], t, conv + mm, x.InternString("forward"));
      x.AddSlice(dev[r], t, conv, x.InternString("conv2d"));
      x.AddSlice(dev[r], t + conv, mm, x.InternString("matmul"));
      arrive[r] = t + conv + mm;
    }
    const int64_t end = std::max(arrive[0], arrive[1]) + 200'000;
    for (int r = 0; r < 2; ++r) {
      tf::TraceWriter& x = *w[r];
      const tf::Arg id{x.InternString("collective_id"),
                       tf::StringId{x.InternString("w#" + std::to_string(s))}};
      x.AddSlice(dev[r], arrive[r], end - arrive[r],
                 x.InternString("all_reduce"), {&id, 1});
      const tf::Arg step{x.InternString("step"), int64_t{s}};
      x.AddSlice(main[r], t, end - t, x.InternString("train_step"), {&step, 1});
    }
  }
  for (auto& x : w) {
    if (!x->Close().ok()) return {};
  }
  return QString::fromStdString(dir.string());
}

int RowOf(QTableWidget* table, const QString& figure) {
  for (int r = 0; r < table->rowCount(); ++r) {
    if (table->item(r, 0)->text() == figure) return r;
  }
  return -1;
}

}  // namespace

class CompareWindowTest : public QObject {
  Q_OBJECT

 private slots:
  void showsTheDiffAndLinksBothTimelines() {
    const QString base = WriteSession("base", 1.0);
    const QString cand = WriteSession("cand", 1.5);
    QVERIFY(!base.isEmpty() && !cand.isEmpty());
    MainWindow main;
    CompareWindow* w = main.ShowCompare(base, cand);
    QSignalSpy loaded(w, &CompareWindow::loaded);
    QVERIFY(w->WaitUntilIdle(30000));
    QCOMPARE(loaded.count(), 1);
    QVERIFY2(w->verdict()->text().startsWith("Step time: slower by +"),
             qPrintable(w->verdict()->text()));

    QTableWidget* table = w->table();
    const int conv = RowOf(table, "op:conv2d");
    QVERIFY(conv >= 0);
    QCOMPARE(table->item(conv, 5)->text(), QStringLiteral("slower"));
    const int matmul = RowOf(table, "op:matmul");
    QVERIFY(matmul >= 0);
    QCOMPARE(table->item(matmul, 5)->text(), QStringLiteral("noise"));

    // A click on conv2d's row: in both timelines, rank 1's conv2d of its
    // median step, selected and in view.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {},
                      table->visualItemRect(table->item(conv, 0)).center());
    int64_t durations[2] = {};
    for (int i = 0; i < 2; ++i) {
      TimelineWidget* t =
          i == 0 ? w->baseline_timeline() : w->candidate_timeline();
      QVERIFY(t->selected().has_value());
      const TraceStore& s = *t->store();
      const EventRef e = *t->selected();
      QCOMPARE(std::string(s.str(s.NameOf(e))), std::string("conv2d"));
      QCOMPARE(s.processes()[s.tracks()[e.track].process].process_index, 1);
      QVERIFY(t->axis().t0() <= s.StartOf(e));
      QVERIFY(t->axis().t1() >= s.StartOf(e) + s.DurationOf(e));
      QVERIFY(t->axis().span() < (s.last_ns() - s.first_ns()) / 4);
      durations[i] = s.DurationOf(e);
    }
    QVERIFY(durations[1] > durations[0] * 14 / 10);

    // The job's median step: both timelines show one whole step.
    const int median = RowOf(table, "step time median (job)");
    QVERIFY(median >= 0);
    w->ActivateRow(median);
    for (TimelineWidget* t :
         {w->baseline_timeline(), w->candidate_timeline()}) {
      QVERIFY(t->axis().span() > 3'000'000);
      QVERIFY(t->axis().span() < 20'000'000);
    }
    w->close();
  }

  void saysWhyItCannotCompare() {
    CompareWindow w;
    w.Open("/nonexistent/baseline", "/nonexistent/candidate");
    QVERIFY(w.WaitUntilIdle(30000));
    QVERIFY2(w.verdict()->text().startsWith("Cannot compare: "
                                            "/nonexistent/baseline"),
             qPrintable(w.verdict()->text()));
    QCOMPARE(w.table()->rowCount(), 0);
  }
};

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::CompareWindowTest)
#include "compare_window_test.moc"
