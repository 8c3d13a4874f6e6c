#include "trace_loader.h"

#include <QMetaObject>
#include <QPointer>
#include <chrono>

#include "podscope/base/parallel.h"

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

TraceLoader::Refined TraceLoader::TakeRefined() {
  Refined out = std::move(refined_);
  refined_ = Refined();
  return out;
}

void TraceLoader::Start(const QString& path, const QString& session) {
  Cancel();
  Join();
  busy_ = true;
  refining_ = false;
  refined_ = Refined();
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
    options.overview_from_index = true;
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
    // The files whose exact overview is still to be made, read before the
    // store is handed over (the GUI thread may grow it then).
    std::vector<std::pair<ProcessId, std::string>> to_refine;
    if (store.ok()) {
      r.store = std::shared_ptr<TraceStore>(std::move(*store));
      for (const ProcessInfo& p : r.store->processes()) {
        if (p.overview != nullptr && !p.overview->exact) {
          to_refine.emplace_back(p.id, p.path);
        }
      }
      if (auto dump = ReadDoctorDump(r.store->session().path)) {
        r.doctor =
            std::make_shared<DoctorView>(BuildDoctorView(*dump, *r.store));
      }
    } else {
      r.cancelled = absl::IsCancelled(store.status());
      r.error = QString::fromStdString(std::string(store.status().message()));
    }
    std::shared_ptr<TraceStore> loaded = r.store;
    const bool refine = !to_refine.empty();
    QMetaObject::invokeMethod(
        self.data(),
        [self, generation, refine, r = std::move(r)]() mutable {
          if (!self || generation != self->generation_) return;
          self->busy_ = false;
          self->refining_ = refine;
          self->result_ = std::move(r);
          emit self->finished();
        },
        Qt::QueuedConnection);
    if (refine) RefineOverviews(self, generation, cancel, loaded, to_refine);
  });
}

void TraceLoader::RefineOverviews(
    QPointer<TraceLoader> self, uint64_t generation,
    std::shared_ptr<std::atomic<bool>> cancel,
    std::shared_ptr<TraceStore> store,
    const std::vector<std::pair<ProcessId, std::string>>& files) {
  for (size_t begin = 0; begin < files.size(); begin += kRefineBatch) {
    const size_t n = std::min(kRefineBatch, files.size() - begin);
    std::vector<std::pair<ProcessId, std::shared_ptr<const ProcessOverview>>>
        batch(n);
    base::ParallelFor(0, n, [&](size_t i) {
      const auto& [process, path] = files[begin + i];
      auto o = SummarizeProcessFile(path, /*align_clocks=*/true, cancel.get());
      // A file that can no longer be read keeps its row from the index.
      batch[i] = {process, o.ok() ? *o : nullptr};
    });
    if (cancel->load()) {
      // Stopped (another trace, a live capture): the rows made so far stay
      // as they are, and the window is idle again.
      QMetaObject::invokeMethod(
          self.data(),
          [self, generation] {
            if (self && generation == self->generation_) {
              self->refining_ = false;
            }
          },
          Qt::QueuedConnection);
      return;
    }
    std::erase_if(batch, [](const auto& b) { return b.second == nullptr; });
    const bool last = begin + n >= files.size();
    QMetaObject::invokeMethod(
        self.data(),
        [self, generation, store, last, batch = std::move(batch)]() mutable {
          if (!self || generation != self->generation_) return;
          self->refined_.store = store;
          auto& into = self->refined_.overviews;
          into.insert(into.end(), batch.begin(), batch.end());
          if (last) self->refining_ = false;
          emit self->overviewsRefined();
        },
        Qt::QueuedConnection);
  }
}

}  // namespace podscope::viewer::app
