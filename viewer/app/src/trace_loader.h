// Opens a trace on a background thread with progress and cancel, and hands
// the store (or the error) back on the GUI thread.
#ifndef PODSCOPE_VIEWER_APP_TRACE_LOADER_H_
#define PODSCOPE_VIEWER_APP_TRACE_LOADER_H_

#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <thread>

#include "podscope/viewer/doctor_dump.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::app {

// Sessions of more files than this open as an overview: one row per host,
// its events loaded when it is expanded (OpenOptions::detail_files).
inline constexpr size_t kOverviewAboveFiles = 64;

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

 signals:
  void progress(qulonglong files_done, qulonglong files_total,
                qulonglong events);
  // last_result() holds the outcome.
  void finished();

 private:
  void Join();

  std::thread thread_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::shared_ptr<std::atomic<bool>> progress_pending_;
  bool busy_ = false;
  uint64_t generation_ = 0;
  Result result_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TRACE_LOADER_H_
