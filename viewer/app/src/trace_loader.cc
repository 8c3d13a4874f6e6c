#include "trace_loader.h"

#include <QMetaObject>
#include <QPointer>
#include <chrono>

namespace podscope::viewer::app {

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {}

TraceLoader::~TraceLoader() {
  Cancel();
  Join();
}

void TraceLoader::Join() {
  if (thread_.joinable()) thread_.join();
}

void TraceLoader::Cancel() {
  if (cancel_) cancel_->store(true);
}

void TraceLoader::Start(const QString& path, const QString& session) {
  Cancel();
  Join();
  busy_ = true;
  const uint64_t generation = ++generation_;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  progress_pending_ = std::make_shared<std::atomic<bool>>(false);
  auto cancel = cancel_;
  auto pending = progress_pending_;
  QPointer<TraceLoader> self(this);
  const std::string p = path.toStdString();
  const std::string s = session.toStdString();
  thread_ = std::thread([self, generation, cancel, pending, p, s, path] {
    OpenOptions options;
    options.cancel = cancel.get();
    options.detail_files = kOverviewAboveFiles;
    options.session = s;
    options.progress = [self, pending](const OpenProgress& pr) {
      // At most one progress report queued at a time: the GUI shows the
      // latest, not every chunk.
      if (pending->exchange(true)) return;
      QMetaObject::invokeMethod(
          self.data(),
          [self, pending, pr] {
            pending->store(false);
            if (self) {
              emit self->progress(pr.files_done, pr.files_total,
                                  pr.events_loaded);
            }
          },
          Qt::QueuedConnection);
    };
    const auto start = std::chrono::steady_clock::now();
    auto store = TraceStore::Open(p, options);
    Result r;
    r.path = path;
    r.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (store.ok()) {
      r.store = std::shared_ptr<TraceStore>(std::move(*store));
      if (auto dump = ReadDoctorDump(r.store->session().path)) {
        r.doctor =
            std::make_shared<DoctorView>(BuildDoctorView(*dump, *r.store));
      }
    } else {
      r.cancelled = absl::IsCancelled(store.status());
      r.error = QString::fromStdString(std::string(store.status().message()));
    }
    QMetaObject::invokeMethod(
        self.data(),
        [self, generation, r = std::move(r)]() mutable {
          if (!self || generation != self->generation_) return;
          self->busy_ = false;
          self->result_ = std::move(r);
          emit self->finished();
        },
        Qt::QueuedConnection);
  });
}

}  // namespace podscope::viewer::app
