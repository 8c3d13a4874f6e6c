// viewer/app benchmark: how long a record takes from reaching a trace file
// to the viewer's first frame that draws it. A writer thread appends
// batches of slices to a `.podtrace` file in a session folder (each batch
// flushed to the file, as a recording process's drain does) while the real
// main window follows the folder (podscope-viewer --follow DIR) under the
// offscreen platform. For every batch, the lag runs from the moment its
// flush returned to the first paint of the timeline whose store holds it.
// Prints the headlines
//   viewer.live_lag_ms      the median lag over the batches
//   viewer.live_lag_max_ms  the worst one
// (`bench/run viewer_app`, beside the frame-time benchmark).
#include <unistd.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QEvent>
#include <QTimer>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "main_window.h"
#include "podscope/trace_format/writer.h"
#include "timeline_widget.h"

namespace {

namespace fs = std::filesystem;
namespace tf = podscope::trace_format;
using Clock = std::chrono::steady_clock;

constexpr int kBatches = 24;
constexpr int kEventsPerBatch = 20'000;
constexpr auto kBatchEvery = std::chrono::milliseconds(150);

struct Batch {
  uint64_t events_so_far = 0;  // the file's events once this batch is in
  Clock::time_point arrived;
};

// Appends the batches to `path`, recording when each reached the file.
void WriteBatches(const std::string& path, std::mutex* mu,
                  std::vector<Batch>* batches, std::atomic<bool>* failed) {
  auto created = tf::TraceWriter::Create(path);
  if (!created.ok()) {
    std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(),
                 std::string(created.status().message()).c_str());
    failed->store(true);
    return;
  }
  tf::TraceWriter& w = **created;
  tf::proto::Metadata m;
  m.set_host("live-host");
  m.set_pid(4242);
  w.SetMetadata(m);
  tf::proto::Track thread;
  thread.set_kind(tf::proto::TRACK_KIND_THREAD);
  thread.set_name("main");
  const uint32_t track = w.AddTrack(thread);
  const uint32_t step = w.InternString("step");
  const uint32_t op = w.InternString("op");
  int64_t t = 1'000'000'000;
  uint64_t written = 0;
  for (int b = 0; b < kBatches; ++b) {
    const auto due = Clock::now() + kBatchEvery;
    // A step with its ops, nested as a training loop records them.
    for (int k = 0; k < kEventsPerBatch / 10; ++k) {
      w.AddSlice(track, t, 9'000, step);
      for (int i = 0; i < 9; ++i) w.AddSlice(track, t + i * 1'000, 900, op);
      t += 10'000;
    }
    written += kEventsPerBatch;
    if (!w.Flush().ok()) {
      failed->store(true);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(*mu);
      batches->push_back({written, Clock::now()});
    }
    std::this_thread::sleep_until(due);
  }
  if (!w.Close().ok()) failed->store(true);
}

// Records, at each paint of the timeline, which batches its store holds.
class PaintWatch : public QObject {
 public:
  PaintWatch(podscope::viewer::app::MainWindow* w, std::mutex* mu,
             std::vector<Batch>* batches)
      : w_(w), mu_(mu), batches_(batches) {}

  std::vector<double> lags_ms;

  bool eventFilter(QObject* object, QEvent* event) override {
    if (event->type() == QEvent::Paint && w_->store() != nullptr) {
      const uint64_t shown = w_->store()->event_count();
      const auto now = Clock::now();
      std::lock_guard<std::mutex> lock(*mu_);
      while (lags_ms.size() < batches_->size() &&
             (*batches_)[lags_ms.size()].events_so_far <= shown) {
        lags_ms.push_back(std::chrono::duration<double, std::milli>(
                              now - (*batches_)[lags_ms.size()].arrived)
                              .count());
      }
    }
    return QObject::eventFilter(object, event);
  }

 private:
  podscope::viewer::app::MainWindow* w_;
  std::mutex* mu_;
  std::vector<Batch>* batches_;
};

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const char* tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") /
                       ("podscope_live_lag_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  podscope::viewer::app::MainWindow w;
  w.resize(1600, 900);
  w.show();
  std::mutex mu;
  std::vector<Batch> batches;
  PaintWatch watch(&w, &mu, &batches);
  w.timeline()->installEventFilter(&watch);
  w.FollowPath(QString::fromStdString(dir.string()));

  std::atomic<bool> failed{false};
  std::thread writer(WriteBatches, (dir / "live-host.4242.podtrace").string(),
                     &mu, &batches, &failed);
  QElapsedTimer clock;
  clock.start();
  QTimer poll;
  poll.setInterval(20);
  QObject::connect(&poll, &QTimer::timeout, [&] {
    if (failed.load() || watch.lags_ms.size() >= kBatches ||
        clock.elapsed() > 60'000) {
      app.quit();
    }
  });
  poll.start();
  app.exec();
  writer.join();
  fs::remove_all(dir);
  if (failed.load() || watch.lags_ms.size() < kBatches) {
    std::fprintf(stderr, "only %zu of %d batches were drawn\n",
                 watch.lags_ms.size(), kBatches);
    return 1;
  }
  std::vector<double> lags = watch.lags_ms;
  std::sort(lags.begin(), lags.end());
  std::printf("batches %d of %d events, one every %lld ms\n", kBatches,
              kEventsPerBatch, static_cast<long long>(kBatchEvery.count()));
  std::printf("viewer.live_lag_ms %.1f ms\n", lags[lags.size() / 2]);
  std::printf("viewer.live_lag_max_ms %.1f ms\n", lags.back());
  return 0;
}
