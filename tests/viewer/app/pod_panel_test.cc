// The Pod panel on a 3-rank session written with TraceWriter: rank 2 is
// slower at every step; each step holds an all-reduce whose
// `collective_id` is the same on every rank, and rank 0 compiles once. The
// real main window opens it: the heat table has a row per step and a
// column per rank, the straggler is named, a click on a cell zooms the
// timeline to that rank's step, and selecting a collective outlines its
// peers on the other ranks. On a 2-rank session whose ranks take turns
// being last, no one is named, and the verdict still shows how much the
// ranks wait and links to the worst wait. Where a step's device work
// outlasts its host slice, a cell and a Time row show the whole step
// window that `podscope analyze` measures, not the host slice alone.
#include "pod_panel.h"

#include <QCheckBox>
#include <QLabel>
#include <QListWidget>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "details_panel.h"
#include "main_window.h"
#include "peer_links.h"
#include "podscope/trace_format/writer.h"
#include "query_panel.h"
#include "rank_test_capture.h"
#include "stats_panel.h"
#include "timeline_widget.h"

namespace podscope::viewer::app {
namespace {

namespace fs = std::filesystem;
namespace tf = trace_format;

constexpr int kRanks = 3;
constexpr int kSteps = 4;
constexpr int64_t kStepNs = 10'000'000;

bool WriteRank(const std::string& path, int rank) {
  auto writer = *tf::TraceWriter::Create(path);
  tf::proto::Metadata m;
  m.set_host("node");
  m.set_pid(100 + rank);
  m.set_process_index(rank);
  m.set_process_count(kRanks);
  (*m.mutable_attributes())["machine.peak_gflops"] = "100";
  (*m.mutable_attributes())["machine.peak_gbps"] = "10";
  writer->SetMetadata(m);
  tf::proto::Track main;
  main.set_kind(tf::proto::TRACK_KIND_THREAD);
  main.set_name("main");
  const uint32_t track = writer->AddTrack(main);
  // Device 0's tracks: a stream (collectives run on it, as the runtime
  // records them) and its allocations.
  auto device_track = [&](const char* name, int32_t stream_id) {
    tf::proto::Track track;
    track.set_kind(tf::proto::TRACK_KIND_DEVICE_STREAM);
    track.set_name(name);
    track.set_device_id(0);
    track.set_stream_id(stream_id);
    track.set_sort_index(stream_id);
    return writer->AddTrack(track);
  };
  const uint32_t device = device_track("device 0 stream 1", 1);
  const uint32_t memory = device_track("device 0 allocations", 2);
  const uint32_t dot = writer->InternString("dense/dot");
  const uint32_t flops = writer->InternString("flops");
  const uint32_t bytes_accessed = writer->InternString("bytes_accessed");
  const uint32_t op = writer->InternString("op");
  const uint32_t dot_op = writer->InternString("dot");
  const uint32_t allocate = writer->InternString("Allocate");
  const uint32_t free = writer->InternString("Free");
  const uint32_t buffer_id = writer->InternString("buffer_id");
  const uint32_t bytes = writer->InternString("bytes");
  const uint32_t step = writer->InternString("train_step");
  const uint32_t fwd = writer->InternString("forward");
  const uint32_t ar = writer->InternString("all_reduce");
  const uint32_t key = writer->InternString("collective_id");
  const uint32_t wait_ns = writer->InternString("wait_ns");
  const uint32_t compile = writer->InternString("Compile");
  // Rank 2 computes 30 % longer; the others wait for it in the all-reduce.
  const int64_t compute = rank == 2 ? 13'000'000 : 10'000'000;
  for (int s = 0; s < kSteps; ++s) {
    const int64_t t = 1'000'000 + s * 20'000'000;
    if (rank == 0 && s == 0) {
      writer->AddSlice(track, t + 100, 500'000, compile);
    }
    writer->AddSlice(track, t + 1'000, compute - 2'000, fwd);
    // A kernel at 10 GFLOP/s (1e8 flops in 10 ms), 10 % of the peak.
    const tf::Arg kernel[] = {{flops, int64_t{100'000'000}},
                              {bytes_accessed, int64_t{1'000'000}},
                              {op, tf::StringId{dot_op}}};
    writer->AddSlice(device, t + 2'000, 10'000'000 - 4'000, dot, kernel);
    // Step s allocates (s + 1) KB and frees it before the next step: the
    // peak is step 3's 4000 bytes.
    const tf::Arg alloc[] = {{buffer_id, int64_t{s}},
                             {bytes, int64_t{1000 * (s + 1)}}};
    writer->AddInstant(memory, t + 500, allocate, alloc);
    writer->AddInstant(memory, t + 15'000'000, free, alloc);
    const uint32_t id = writer->InternString("grads#" + std::to_string(s));
    // The wait the runtime records: until rank 2 arrives.
    const tf::Arg args[] = {{key, tf::StringId{id}},
                            {wait_ns, int64_t{13'000'000 - compute}}};
    writer->AddSlice(device, t + compute, 14'000'000 - compute, ar, args);
    writer->AddSlice(track, t, 14'000'000 + (rank == 2 ? s * 1000 : 0), step);
  }
  return writer->Close().ok();
}

QString WriteSession() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir =
      fs::path(tmp ? tmp : "/tmp") / ("pod_panel_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r = 0; r < kRanks; ++r) {
    WriteRank(
        (dir / ("node." + std::to_string(100 + r) + ".podtrace")).string(), r);
  }
  return QString::fromStdString(dir.string());
}

// Two ranks that take turns arriving last at the one all-reduce of each of
// six steps (10 ms apart), rank s % 2 late by 1 ms + s × 100 µs: neither
// makes the other wait consistently longer, and the worst wait is step 5's
// 1.5 ms.
QString WriteTakingTurnsSession() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") /
                       ("pod_panel_turns_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int rank = 0; rank < 2; ++rank) {
    auto writer = *tf::TraceWriter::Create(
        (dir / ("node." + std::to_string(200 + rank) + ".podtrace")).string());
    tf::proto::Metadata m;
    m.set_host("node");
    m.set_pid(200 + rank);
    m.set_process_index(rank);
    m.set_process_count(2);
    writer->SetMetadata(m);
    tf::proto::Track main;
    main.set_kind(tf::proto::TRACK_KIND_THREAD);
    main.set_name("main");
    const uint32_t thread = writer->AddTrack(main);
    tf::proto::Track stream;
    stream.set_kind(tf::proto::TRACK_KIND_DEVICE_STREAM);
    stream.set_name("device 0 stream 1");
    stream.set_device_id(0);
    stream.set_stream_id(1);
    const uint32_t device = writer->AddTrack(stream);
    const uint32_t step = writer->InternString("train_step");
    const uint32_t ar = writer->InternString("all_reduce");
    const uint32_t key = writer->InternString("collective_id");
    for (int s = 0; s < 6; ++s) {
      const int64_t t = 1'000'000 + s * 10'000'000;
      const int64_t late = 1'000'000 + s * 100'000;
      const int64_t arrive = t + 5'000'000 + (s % 2 == rank ? late : 0);
      const int64_t end = t + 5'000'000 + late + 200'000;
      const uint32_t id = writer->InternString("world#" + std::to_string(s));
      const tf::Arg arg{key, tf::StringId{id}};
      writer->AddSlice(device, arrive, end - arrive, ar, {&arg, 1});
      writer->AddSlice(thread, t, end - t, step);
    }
    if (!writer->Close().ok()) return QString();
  }
  return QString::fromStdString(dir.string());
}

}  // namespace

// Rank `rank`'s first slice named `name` that starts at least `from_ns`
// and before `to_ns` after the session's first event.
std::optional<EventRef> RankSlice(const TraceStore& s, int rank,
                                  std::string_view name, int64_t from_ns = 0,
                                  int64_t to_ns = INT64_MAX) {
  for (const TrackInfo& info : s.tracks()) {
    if (s.processes()[info.process].process_index != rank) continue;
    const SliceColumns& c = s.data(info.id).slices;
    for (uint32_t i = 0; i < c.size(); ++i) {
      const int64_t at = c.start(i) - s.first_ns();
      if (s.str(c.name(i)) == name && at >= from_ns && at < to_ns) {
        return EventRef{info.id, tf::EventKind::kSlice, i};
      }
    }
  }
  return std::nullopt;
}

// Shows `w` at 1600×1000, opens the session in `dir` and waits until it
// is loaded and idle.
bool OpenInWindow(MainWindow& w, const QString& dir) {
  w.resize(1600, 1000);
  w.show();
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.OpenPath(dir);
  return (loaded.wait(30000) || loaded.count() > 0) && w.WaitUntilIdle(30000);
}

class PodPanelTest : public QObject {
  Q_OBJECT

 private slots:
  void comparesRanksAndLinksToTheTimeline() {
    const QString dir = WriteSession();
    QVERIFY(!dir.isEmpty());
    MainWindow w;
    QVERIFY(OpenInWindow(w, dir));
    PodPanel* pod = w.pod();
    QTableWidget* table = pod->table();

    // A row per step, a column per rank.
    QCOMPARE(table->rowCount(), kSteps);
    QCOMPARE(table->columnCount(), kRanks);
    QCOMPARE(table->horizontalHeaderItem(2)->text(), QStringLiteral("rank 2"));
    // Rank 2's cells are shaded: slower than their row's median.
    QVERIFY(table->item(1, 2)->background().color() !=
            table->item(1, 0)->background().color());
    QCOMPARE(table->item(1, 0)->background().color(), QColor(Qt::white));

    // The verdict: the straggler with the test's evidence, how much the
    // ranks wait (rank 0 and 1 wait 3 ms of each 14 ms step for rank 2's
    // arrival), who arrived last how often, and the worst wait with a link
    // to it.
    const QString verdict = pod->verdict()->text();
    QVERIFY2(verdict.contains("rank 2 is the straggler: the others waited "
                              "24.0 ms for it, at most 0 ns for any other "
                              "rank (p &lt; 0.0001 over 4 steps); longer "
                              "on it than on the others: forward (+12.0 "
                              "ms)"),
             qPrintable(verdict));
    QVERIFY2(verdict.contains("; ranks wait 0.0–21.4% of step time in "
                              "collectives; last to arrive: rank 2 ×4, "
                              "rank 0 ×0, rank 1 ×0; worst wait 3.00 ms at "
                              "all_reduce #0, step 0"),
             qPrintable(verdict));
    QVERIFY2(verdict.contains("<a href=\"evidence\">show</a>"),
             qPrintable(verdict));
    QVERIFY(pod->model().evidence.has_value());
    // The link selects rank 2's late arrival at that collective and shows
    // the whole collective, from the first arrival to its end on every
    // rank.
    emit pod->verdict()->linkActivated(QStringLiteral("evidence"));
    {
      const TraceStore& s = *w.store();
      QVERIFY(w.timeline()->selected().has_value());
      const EventRef e = *w.timeline()->selected();
      QCOMPARE(std::string(s.str(s.NameOf(e))), std::string("all_reduce"));
      QCOMPARE(s.processes()[s.tracks()[e.track].process].process_index, 2);
      QCOMPARE(s.StartOf(e) - s.first_ns(), int64_t{13'000'000});
      const TimeAxis& axis = w.timeline()->axis();
      QVERIFY(axis.t0() <= s.first_ns() + 10'000'000);
      QVERIFY(axis.t1() >= s.first_ns() + 14'000'000);
      QVERIFY(axis.span() < 10'000'000);
      // Its peers on the other ranks are outlined.
      QCOMPARE(w.timeline()->highlighted().size(), size_t{kRanks});
    }
    // A wait reads in units in the details, the exact nanoseconds in its
    // tooltip: rank 0's all-reduce of step 0 waited 3 ms.
    {
      const TraceStore& s = *w.store();
      const std::optional<EventRef> waited = RankSlice(s, 0, "all_reduce");
      QVERIFY(waited.has_value());
      w.timeline()->Select(*waited, /*reveal=*/true);
      QTableWidget* args = w.details()->args_table();
      int row = -1;
      for (int r = 0; r < args->rowCount(); ++r) {
        if (args->item(r, 0)->text() == "wait_ns") row = r;
      }
      QVERIFY(row >= 0);
      QCOMPARE(args->item(row, 1)->text(), QStringLiteral("3.00 ms"));
      QCOMPARE(args->item(row, 1)->toolTip(), QStringLiteral("3000000 ns"));
    }

    // The compilation is listed.
    QCOMPARE(pod->compiles()->count(), 1);
    QVERIFY2(pod->compiles()->item(0)->text().startsWith("rank 0"),
             qPrintable(pod->compiles()->item(0)->text()));
    // Double-clicking it shows it.
    emit pod->compiles()->itemActivated(pod->compiles()->item(0));
    QCOMPARE(std::string(
                 w.store()->str(w.store()->NameOf(*w.timeline()->selected()))),
             std::string("Compile"));

    // A click on (step 2, rank 1) zooms the timeline to that step.
    TimelineWidget* t = w.timeline();
    const int64_t whole = w.store()->last_ns() - w.store()->first_ns();
    const QRect cell = table->visualItemRect(table->item(2, 1));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    QVERIFY(t->selected().has_value());
    const TraceStore& s = *w.store();
    const EventRef step = *t->selected();
    QCOMPARE(std::string(s.str(s.NameOf(step))), std::string("train_step"));
    QCOMPARE(s.processes()[s.tracks()[step.track].process].process_index, 1);
    const int64_t start = s.StartOf(step);
    QCOMPARE(start - s.first_ns(), int64_t{2 * 20'000'000});
    QVERIFY(t->axis().t0() <= start);
    QVERIFY(t->axis().t1() >= start + s.DurationOf(step));
    QVERIFY(t->axis().span() < whole / 2);  // zoomed in

    // Selecting rank 0's all-reduce of step 2 outlines its peers on every
    // rank.
    const std::optional<EventRef> collective =
        RankSlice(s, 0, "all_reduce", 2 * 20'000'000 + 1, 3 * 20'000'000);
    QVERIFY(collective.has_value());
    t->Select(*collective, /*reveal=*/true);
    QCOMPARE(pod->peers().size(), size_t{kRanks});
    QCOMPARE(t->highlighted().size(), size_t{kRanks});
    QSet<int> ranks;
    for (const EventRef& e : t->highlighted()) {
      ranks.insert(s.processes()[s.tracks()[e.track].process].process_index);
      QCOMPARE(std::string(s.str(s.NameOf(e))), std::string("all_reduce"));
      QVERIFY(s.StartOf(e) - s.first_ns() > 2 * 20'000'000);
      QVERIFY(s.StartOf(e) - s.first_ns() < 3 * 20'000'000);
      QVERIFY2(t->BoxOf(e).has_value(), "a peer is not on screen");
    }
    QCOMPARE(ranks, QSet<int>({0, 1, 2}));
    // A slice that is no collective clears them.
    t->Select(step);
    QVERIFY(t->highlighted().empty());

    // The other analyses, one tab each, then a live job's health.
    QCOMPARE(pod->tabs()->count(), 6);
    QCOMPARE(pod->tabs()->tabText(5), QStringLiteral("Job health"));
    QCOMPARE(pod->tabs()->tabText(1), QStringLiteral("Time"));
    auto column = [](QTableWidget* v, const QString& name) {
      for (int c = 0; c < v->columnCount(); ++c) {
        if (v->horizontalHeaderItem(c)->text() == name) return c;
      }
      return -1;
    };
    auto find_row = [](QTableWidget* v, int c, const QString& text) {
      for (int r = 0; r < v->rowCount(); ++r) {
        if (v->item(r, c) && v->item(r, c)->text() == text) return r;
      }
      return -1;
    };
    // Where step time went: a row per rank, with the compute share.
    QTableWidget* time = pod->view_table(0);
    QCOMPARE(time->rowCount(), kRanks);
    QVERIFY(column(time, "compute") > 0);
    QCOMPARE(time->item(2, 0)->text(), QStringLiteral("rank 2"));
    // Top work: "forward" on the host; a click shows its longest slice,
    // rank 2's (its forward is 30 % longer).
    QTableWidget* top = pod->view_table(1);
    const int forward = find_row(top, column(top, "name"), "forward");
    QVERIFY(forward >= 0);
    QCOMPARE(top->item(forward, 0)->text(), QStringLiteral("node host"));
    pod->ActivateViewRow(1, forward);
    {
      QVERIFY(t->selected().has_value());
      const EventRef e = *t->selected();
      QCOMPARE(std::string(s.str(s.NameOf(e))), std::string("forward"));
      QCOMPARE(s.processes()[s.tracks()[e.track].process].process_index, 2);
      QCOMPARE(s.DurationOf(e), int64_t{13'000'000 - 2'000});
    }
    // The op profile: dot at 10 GFLOP/s, 10 % of the 100 GFLOP/s peak.
    QTableWidget* ops = pod->view_table(2);
    const int dot_row = find_row(ops, column(ops, "op"), "dot");
    QVERIFY(dot_row >= 0);
    QCOMPARE(ops->item(dot_row, column(ops, "GFLOP/s"))->text(),
             QStringLiteral("10.00"));
    QCOMPARE(ops->item(dot_row, column(ops, "of bound"))->text(),
             QStringLiteral("10.0%"));
    // Memory: each rank's device 0 peaks at step 3's 4000 bytes; a click
    // shows the moment of the peak.
    QTableWidget* mem = pod->view_table(3);
    const int peak = find_row(mem, column(mem, "peak"), "3.91 KiB");
    QVERIFY2(peak >= 0, qPrintable(mem->item(0, 1)->text()));
    const int64_t peak_at = s.first_ns() + 3 * 20'000'000 + 500;
    pod->ActivateViewRow(3, peak);
    QVERIFY(t->axis().t0() <= peak_at);
    QVERIFY(t->axis().t1() >= peak_at);
    QVERIFY(t->axis().span() < whole / 10);
  }

  // Selecting a collective lists its peers in the details: each rank, how
  // much later than the first it arrived, how long it waited, the last
  // arrival marked; and the timeline joins the peers with lines.
  void collectiveDetailsShowItsPeers() {
    const QString dir = WriteSession();
    MainWindow w;
    QVERIFY(OpenInWindow(w, dir));
    const TraceStore& s = *w.store();
    const std::optional<EventRef> collective = RankSlice(s, 0, "all_reduce");
    QVERIFY(collective.has_value());
    w.timeline()->Select(*collective, /*reveal=*/true);
    QTableWidget* peers = w.details()->peers_table();
    QVERIFY(peers->isVisibleTo(w.details()));
    QCOMPARE(peers->rowCount(), kRanks);
    // Ranks 0 and 1 arrive together and wait 3 ms for rank 2.
    auto cell = [&](int r, int c) { return peers->item(r, c)->text(); };
    QCOMPARE(cell(0, 0), QStringLiteral("rank 0"));
    QCOMPARE(cell(0, 1), QStringLiteral("first"));
    QCOMPARE(cell(0, 2), QStringLiteral("3.00 ms"));
    QCOMPARE(cell(1, 1), QStringLiteral("first"));
    QCOMPARE(cell(2, 0), QStringLiteral("rank 2 (arrived last)"));
    QCOMPARE(cell(2, 1), QStringLiteral("+3.00 ms"));
    QCOMPARE(cell(2, 2), QStringLiteral("0 ns"));
    for (int r = 0; r < peers->rowCount(); ++r) {
      QVERIFY2(!cell(r, 2).contains("wait_ns"), qPrintable(cell(r, 2)));
    }
    // A click on a peer shows it.
    emit peers->cellActivated(2, 0);
    QCOMPARE(s.processes()[s.tracks()[w.timeline()->selected()->track].process]
                 .process_index,
             2);

    // On screen: the line from rank 0's arrival to rank 1's passes halfway
    // between their boxes in the peer colour.
    w.timeline()->Select(*collective, /*reveal=*/true);
    QCOMPARE(w.timeline()->highlighted().size(), size_t{kRanks});
    std::vector<QRect> boxes;
    for (const EventRef& e : w.timeline()->highlighted()) {
      auto box = w.timeline()->BoxOf(e);
      QVERIFY2(box.has_value(), "a peer is not on screen");
      boxes.push_back(*box);
    }
    std::sort(boxes.begin(), boxes.end(),
              [](const QRect& a, const QRect& b) { return a.y() < b.y(); });
    const QImage image = w.timeline()->grab().toImage();
    for (size_t i = 0; i + 1 < boxes.size(); ++i) {
      const QPoint a(boxes[i].left(), boxes[i].center().y());
      const QPoint b(boxes[i + 1].left(), boxes[i + 1].center().y());
      const QPoint mid((a.x() + b.x()) / 2, (a.y() + b.y()) / 2);
      const qreal dpr = image.devicePixelRatio();
      const QColor c = image.pixelColor(mid * dpr);
      QVERIFY2(
          c == kPeerLinkColor,
          qPrintable(
              QString("%1 at %2,%3").arg(c.name()).arg(mid.x()).arg(mid.y())));
    }
  }

  // A click on a rank's row in Pod › Time selects that rank's slowest step
  // and brings it into view.
  void timeRowSelectsTheSlowestStep() {
    const QString dir = WriteSession();
    MainWindow w;
    QVERIFY(OpenInWindow(w, dir));
    PodPanel* pod = w.pod();
    pod->tabs()->setCurrentIndex(1);
    QTableWidget* time = pod->view_table(0);
    QCOMPARE(time->item(2, 0)->text(), QStringLiteral("rank 2"));
    QTest::mouseClick(time->viewport(), Qt::LeftButton, {},
                      time->visualItemRect(time->item(2, 0)).center());
    TimelineWidget* t = w.timeline();
    QVERIFY(t->selected().has_value());
    const TraceStore& s = *w.store();
    const EventRef e = *t->selected();
    QCOMPARE(std::string(s.str(s.NameOf(e))), std::string("train_step"));
    QCOMPARE(s.processes()[s.tracks()[e.track].process].process_index, 2);
    // Rank 2's step 3 is its longest (each step 1 µs longer than the last).
    QCOMPARE(s.StartOf(e) - s.first_ns(), int64_t{3 * 20'000'000});
    QVERIFY2(t->BoxOf(e).has_value(), "the step is not on screen");
  }

  // The arguments table gives the keys the width they need and the values
  // the rest: nothing is cut off or scrolled sideways.
  void detailsArgumentsUseTheirSpace() {
    const QString dir = WriteSession();
    MainWindow w;
    QVERIFY(OpenInWindow(w, dir));
    const TraceStore& s = *w.store();
    std::optional<EventRef> kernel;
    for (const TrackInfo& info : s.tracks()) {
      const SliceColumns& c = s.data(info.id).slices;
      for (uint32_t i = 0; i < c.size() && !kernel; ++i) {
        if (s.str(c.name(i)) == "dense/dot") {
          kernel = EventRef{info.id, tf::EventKind::kSlice, i};
        }
      }
    }
    QVERIFY(kernel.has_value());
    w.timeline()->Select(*kernel, /*reveal=*/true);
    QTableWidget* args = w.details()->args_table();
    QCOMPARE(args->rowCount(), 3);
    const QFontMetrics fm(args->font());
    for (int r = 0; r < args->rowCount(); ++r) {
      for (int c = 0; c < 2; ++c) {
        const QString text = args->item(r, c)->text();
        QVERIFY2(fm.horizontalAdvance(text) < args->columnWidth(c),
                 qPrintable(QString("%1 in a %2 px column")
                                .arg(text)
                                .arg(args->columnWidth(c))));
      }
    }
    QCOMPARE(args->columnWidth(0) + args->columnWidth(1),
             args->viewport()->width());
    QVERIFY(!args->horizontalScrollBar()->isVisible());
    // Every row shows without scrolling.
    QVERIFY(!args->verticalScrollBar()->isVisible());
  }

  // Statistics' "Per host" splits a name by rank too: the three ranks share
  // a host, and each has its own "forward" row.
  void statisticsPerHostSplitsByRank() {
    const QString dir = WriteSession();
    MainWindow w;
    QVERIFY(OpenInWindow(w, dir));
    StatsPanel* stats = w.stats();
    stats->by_host_box()->setChecked(true);
    QVERIFY(w.WaitUntilIdle(30000));
    QAbstractItemModel* shown = stats->view()->model();
    QStringList forward;
    for (int r = 0; r < shown->rowCount(); ++r) {
      if (shown->index(r, StatsModel::kName).data().toString() == "forward") {
        forward << shown->index(r, StatsModel::kHost).data().toString();
        QCOMPARE(shown->index(r, StatsModel::kCount).data().toString(),
                 QString::number(kSteps));
      }
    }
    forward.sort();
    QCOMPARE(forward,
             QStringList({"node · rank 0", "node · rank 1", "node · rank 2"}));
    QCOMPARE(shown->headerData(StatsModel::kHost, Qt::Horizontal).toString(),
             QStringLiteral("Host · rank"));
    QVERIFY(!stats->view()->isColumnHidden(StatsModel::kHost));
  }

  // With no straggler the verdict still says how much the ranks wait, who
  // arrived last how often and where the worst wait was, and its link
  // shows that collective.
  void noStragglerStillShowsTheWorstWait() {
    const QString dir = WriteTakingTurnsSession();
    QVERIFY(!dir.isEmpty());
    MainWindow w;
    QVERIFY(OpenInWindow(w, dir));
    PodPanel* pod = w.pod();
    const QString verdict = pod->verdict()->text();
    QVERIFY2(verdict.startsWith("No consistent straggler: rank 1 caused the "
                                "most waiting, 3.90 ms, at most 3.60 ms for "
                                "any other rank (p = 0.93 over 6 steps, "
                                "corrected for picking 1 of 2 ranks); ranks "
                                "wait "),
             qPrintable(verdict));
    QVERIFY2(verdict.contains("% of step time in collectives; last to "
                              "arrive: rank 0 ×3, rank 1 ×3; worst wait "
                              "1.50 ms at all_reduce #5, step 5 <a "
                              "href=\"evidence\">show</a>"),
             qPrintable(verdict));
    QVERIFY(!verdict.contains("<b>"));  // no one named
    emit pod->verdict()->linkActivated(QStringLiteral("evidence"));
    const TraceStore& s = *w.store();
    QVERIFY(w.timeline()->selected().has_value());
    const EventRef e = *w.timeline()->selected();
    QCOMPARE(std::string(s.str(s.NameOf(e))), std::string("all_reduce"));
    QCOMPARE(s.processes()[s.tracks()[e.track].process].process_index, 1);
    const int64_t step5 = s.first_ns() + 5 * 10'000'000;
    QCOMPARE(s.StartOf(e), step5 + 5'000'000 + 1'500'000);
    const TimeAxis& axis = w.timeline()->axis();
    QVERIFY(axis.t0() <= step5 + 5'000'000);
    QVERIFY(axis.t1() >= step5 + 5'000'000 + 1'700'000);
    QVERIFY(axis.span() < 5'000'000);
    QCOMPARE(w.timeline()->highlighted().size(), size_t{2});
  }
  // A step's window runs to the end of the device work it launched (the
  // same window as `podscope analyze`'s step table): a cell click and a
  // Time row click zoom to that window, not to the shorter host slice.
  void stepCellsZoomToTheStepWindow() {
    using viewer::testing::kRankStepSlice;
    using viewer::testing::kRankStepWindow;
    using viewer::testing::RankStepStart;
    using viewer::testing::WriteRankSession;
    const QString tmp = QString::fromLocal8Bit(qgetenv("TEST_TMPDIR"));
    const std::string root =
        (tmp.isEmpty() ? std::string("/tmp") : tmp.toStdString()) +
        "/pod_panel_window_" + std::to_string(getpid());
    std::filesystem::remove_all(root);
    const QString dir =
        QString::fromStdString(WriteRankSession(root, /*ranks=*/2,
                                                /*steps=*/4));
    MainWindow w;
    QVERIFY(OpenInWindow(w, dir));
    const TraceStore& s = *w.store();
    TimelineWidget* t = w.timeline();
    // Rank 1's step 2: host slice [start, start + 12 ms), window to 16 ms.
    const int64_t start = s.first_ns() + RankStepStart(1, 2) - 1'000'000;
    QTableWidget* table = w.pod()->table();
    const QRect cell = table->visualItemRect(table->item(2, 1));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    QVERIFY(t->selected().has_value());
    QCOMPARE(s.StartOf(*t->selected()), start);
    QCOMPARE(s.DurationOf(*t->selected()), kRankStepSlice);
    QVERIFY2(
        t->axis().t0() <= start && t->axis().t1() >= start + kRankStepWindow,
        qPrintable(QStringLiteral("shown %1..%2 ms after the step")
                       .arg((t->axis().t0() - start) / 1e6)
                       .arg((t->axis().t1() - start) / 1e6)));
    QVERIFY(t->axis().span() < 2 * kRankStepWindow);
    // The step's critical path is stated and outlined on the timeline.
    const QString path = w.pod()->path_label()->text();
    QVERIFY2(path.startsWith("Critical path of step 2 ("), qPrintable(path));
    QVERIFY(!w.pod()->path().empty());
    QCOMPARE(t->highlighted(), w.pod()->path());
    for (const EventRef& e : w.pod()->path()) {
      QVERIFY(s.StartOf(e) + s.DurationOf(e) > start - 200'000);
      QVERIFY(s.StartOf(e) < start + kRankStepWindow + 200'000);
    }

    // The Time view's row of rank 0: its slowest step, whole.
    w.pod()->tabs()->setCurrentIndex(1);
    QTableWidget* time = w.pod()->view_table(0);
    t->ZoomToTimes(s.first_ns(), s.last_ns());
    const QRect row = time->visualItemRect(time->item(0, 0));
    QTest::mouseClick(time->viewport(), Qt::LeftButton, {}, row.center());
    QVERIFY(t->selected().has_value());
    const int64_t slowest = s.StartOf(*t->selected());
    QCOMPARE(s.DurationOf(*t->selected()), kRankStepSlice);
    QVERIFY(t->axis().t0() <= slowest);
    QVERIFY(t->axis().t1() >= slowest + kRankStepWindow);
    QVERIFY(t->axis().span() < 2 * kRankStepWindow);
  }
  // The Query panel: SQL over the open session; a row with an id shows
  // its slice.
  void queryPanelListsRowsThatLinkToTheTimeline() {
    const QString dir = WriteSession();
    MainWindow w;
    QVERIFY(OpenInWindow(w, dir));
    QueryPanel* q = w.query();
    QSignalSpy done(q, &QueryPanel::finished);
    q->Run(
        "SELECT id, rank, ts FROM slices WHERE name = 'train_step' AND rank "
        "= 1 ORDER BY ts");
    QVERIFY(done.wait(30000) || done.count() > 0);
    QCOMPARE(q->table()->rowCount(), kSteps);
    QCOMPARE(q->table()->horizontalHeaderItem(0)->text(), QStringLiteral("id"));
    QVERIFY2(q->status()->text().contains("click a row"),
             qPrintable(q->status()->text()));
    q->ActivateRow(2);
    const TraceStore& s = *w.store();
    QVERIFY(w.timeline()->selected().has_value());
    const EventRef e = *w.timeline()->selected();
    QCOMPARE(std::string(s.str(s.NameOf(e))), std::string("train_step"));
    QCOMPARE(s.processes()[s.tracks()[e.track].process].process_index, 1);
    QCOMPARE(QString::number(s.StartOf(e)), q->table()->item(2, 2)->text());

    // An aggregate the store's columns answer (docs/analysis.md), shown
    // like any other result.
    q->Run(
        "SELECT name, count(*) AS n FROM slices WHERE rank = 1 AND name = "
        "'train_step' GROUP BY name");
    QVERIFY(done.wait(30000) || done.count() > 1);
    QCOMPARE(q->table()->rowCount(), 1);
    QCOMPARE(q->table()->horizontalHeaderItem(1)->text(), QStringLiteral("n"));
    QCOMPARE(q->table()->item(0, 1)->text(), QString::number(kSteps));

    q->Run("SELECT nope FROM slices");
    QVERIFY(done.wait(30000) || done.count() > 2);
    QVERIFY2(q->status()->text().startsWith("Error: SQL: no such column"),
             qPrintable(q->status()->text()));
  }
};

}  // namespace podscope::viewer::app

QTEST_MAIN(podscope::viewer::app::PodPanelTest)
#include "pod_panel_test.moc"
