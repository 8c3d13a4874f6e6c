// The Pod panel's "Job health" tab: a live job's state from its
// coordinator, as `podscope doctor` shows it (podscope/job/doctor_report.h,
// the same client and the same rows): the verdict, then per rank its step,
// its last heartbeat, the collective it is in or last finished and the
// scope its issuing thread is in and for how long. While a capture of the
// job runs, it is read again every second on a thread of its own; when the
// capture ends, the last state stays shown.
#ifndef PODSCOPE_VIEWER_APP_JOB_DOCTOR_VIEW_H_
#define PODSCOPE_VIEWER_APP_JOB_DOCTOR_VIEW_H_

#include <QString>
#include <QWidget>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

class QLabel;
class QTableWidget;

namespace podscope::job {
class CoordinationClient;
struct JobStateView;
}  // namespace podscope::job

namespace podscope::viewer::app {

class JobDoctorView : public QWidget {
  Q_OBJECT

 public:
  explicit JobDoctorView(QWidget* parent = nullptr);
  // Stops watching and waits for the thread.
  ~JobDoctorView() override;

  // Reads the job's state at `address` (its coordinator) every
  // `interval_ms` until StopWatching; `token` empty: $PODSCOPE_JOB_TOKEN.
  void Watch(const QString& address, const QString& token,
             int interval_ms = 1000);
  // Stops reading; what was shown stays.
  void StopWatching();
  bool watching() const { return thread_.joinable(); }
  QString address() const { return address_; }

  QLabel* verdict_label() const { return verdict_; }
  QTableWidget* table() const { return table_; }
  // How many answers (or failures) were shown since Watch.
  int refreshes() const { return refreshes_; }

 signals:
  void refreshed();

 private:
  void Show(const job::JobStateView& view);
  void ShowError(const QString& error);

  QLabel* verdict_;
  QTableWidget* table_;
  QString address_;
  int refreshes_ = 0;
  std::shared_ptr<job::CoordinationClient> client_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  // Answers from an earlier watch are dropped.
  uint64_t generation_ = 0;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_JOB_DOCTOR_VIEW_H_
