// Opens a trace on a background thread with progress and cancel, and hands
// the store (or the error) back on the GUI thread.
#ifndef PODSCOPE_VIEWER_APP_TRACE_LOADER_H_
#define PODSCOPE_VIEWER_APP_TRACE_LOADER_H_

#include <QObject>
#include <QPointer>
#include <QString>
#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "podscope/viewer/doctor_dump.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::app {

// Sessions of more files than this open as an overview: one row per host,
// its events loaded when it is expanded (OpenOptions::detail_files). The
// rows come from the files' indexes first, so that a pod's session shows
// in the time it takes to read them; the loader then reads each file once
// in the background for its exact row (busy time and steps) and hands
// them over in batches (overviewsRefined).
inline constexpr size_t kOverviewAboveFiles = 64;
// Exact rows handed over at a time.
inline constexpr size_t kRefineBatch = 64;

class TraceLoader : public QObject {
  Q_OBJECT

 public:
  explicit TraceLoader(QObject* parent = nullptr);
  ~TraceLoader() override;

  // Starts loading `path` (cancelling a load already running). `session`
  // picks a logdir's session folder (empty: the newest).
  void Start(const QString& path, const QString& session = {});
  void Cancel();
  bool busy() const { return busy_; }
  // The exact overview rows of the last store are still being made.
  bool refining() const { return refining_; }

  struct Result {
    QString path;
    // null on failure; not const: an overview loads hosts on demand.
    std::shared_ptr<TraceStore> store;
    QString error;
    // A job doctor's dump folder: its verdict and marks (null otherwise).
    std::shared_ptr<const DoctorView> doctor;
    bool cancelled = false;
    double seconds = 0;
  };
  const Result& last_result() const { return result_; }

  // Exact overviews made since the last call, for processes of `store`
  // (the last result's). Put them in with TraceStore::SetOverviews.
  struct Refined {
    std::shared_ptr<TraceStore> store;
    std::vector<std::pair<ProcessId, std::shared_ptr<const ProcessOverview>>>
        overviews;
  };
  Refined TakeRefined();

 signals:
  void progress(qulonglong files_done, qulonglong files_total,
                qulonglong events);
  // last_result() holds the outcome.
  void finished();
  // TakeRefined() has overviews; refining() is false after the last.
  void overviewsRefined();

 private:
  void Join();
  // On the loading thread, after the store was handed over: the exact
  // overviews of `files`, posted a batch at a time.
  static void RefineOverviews(
      QPointer<TraceLoader> self, uint64_t generation,
      std::shared_ptr<std::atomic<bool>> cancel,
      std::shared_ptr<TraceStore> store,
      const std::vector<std::pair<ProcessId, std::string>>& files);

  std::thread thread_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::shared_ptr<std::atomic<bool>> progress_pending_;
  bool busy_ = false;
  bool refining_ = false;
  Refined refined_;
  uint64_t generation_ = 0;
  Result result_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TRACE_LOADER_H_
