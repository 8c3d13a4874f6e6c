// File › Capture…: records running profiler servers (podscope::profiler's
// capture client, as `podscope capture` does) into a session folder, off the
// GUI thread, with progress, per-worker errors and Cancel. Each worker's
// protocol is found as its address is typed (Podscope's own service, or
// XProf's tensorflow.ProfilerService that JAX, TensorFlow and PyTorch/XLA
// serve), and XProf's tracer levels and clock alignment are offered when a
// worker speaks it. started() names
// the session folder as the capture begins (the main window shows its files
// as they grow); when at least one worker's file was written, captured()
// hands the session folder to the main window.
#ifndef PODSCOPE_VIEWER_APP_CAPTURE_DIALOG_H_
#define PODSCOPE_VIEWER_APP_CAPTURE_DIALOG_H_

#include <QDialog>
#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>
#include <thread>

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QRadioButton;
class QSpinBox;
class QTimer;

namespace podscope::viewer::app {

struct CaptureRequestFields {
  QStringList workers;  // host:port
  QString job;          // a job's coordinator (host:port): every rank
  int duration_ms = 2000;
  QString logdir;
  QString session;  // empty: a UTC timestamp
  QString token;    // empty: $PODSCOPE_PROFILER_TOKEN
  // For workers that speak XProf (CaptureOptions' fields of those names).
  int host_tracer_level = 2;
  int device_tracer_level = 1;
  int python_tracer_level = 0;
  QString align = QStringLiteral("best");
  bool also_xplane = false;
};

// One address's protocol as the dialog shows it: "Podscope (host, pid N)",
// "XProf (JAX, TensorFlow, PyTorch/XLA)" or the reason it is neither.
QString DescribeWorkerProtocol(const QString& protocol, const QString& host,
                               qlonglong pid, const QString& error);

// "a:1, b:2 ,," -> {"a:1", "b:2"}.
QStringList ParseWorkerList(const QString& text);

class CaptureDialog : public QDialog {
  Q_OBJECT

 public:
  explicit CaptureDialog(QWidget* parent = nullptr);
  // Cancels a running capture and waits for it (the workers' files end
  // complete).
  ~CaptureDialog() override;

  bool running() const { return running_; }
  // The form's values: the workers or the job, whichever is chosen; an
  // empty choice or logdir makes Start refuse.
  CaptureRequestFields fields() const;

  // For tests and the main window.
  QLineEdit* workers_edit() const { return workers_; }
  QLineEdit* job_edit() const { return job_; }
  // Workers or Job: which of the two fields is recorded.
  QRadioButton* workers_radio() const { return workers_radio_; }
  QRadioButton* job_radio() const { return job_radio_; }
  QProgressBar* progress_bar() const { return progress_; }
  QSpinBox* duration_edit() const { return duration_; }
  QLineEdit* logdir_edit() const { return logdir_; }
  QLineEdit* session_edit() const { return session_; }
  QLineEdit* token_edit() const { return token_; }
  // Each worker's protocol, one line per address, as last found.
  QLabel* protocols_label() const { return protocols_; }
  // Shown while a worker of the list speaks XProf.
  QGroupBox* xprof_box() const { return xprof_box_; }
  QComboBox* host_level_edit() const { return host_level_; }
  QComboBox* device_level_edit() const { return device_level_; }
  QComboBox* python_level_edit() const { return python_level_; }
  QComboBox* align_edit() const { return align_; }
  QCheckBox* also_xplane_edit() const { return also_xplane_; }
  QPushButton* start_button() const { return start_; }
  QPushButton* cancel_button() const { return cancel_; }
  QString status_text() const;
  QString errors_text() const;
  QString last_session_dir() const { return session_dir_; }

 public slots:
  void StartCapture();
  // While running: stop the capture early (what was recorded is kept and
  // opened). Otherwise: close the dialog.
  void CancelOrClose();
  // Finds the protocol of every worker listed (off the GUI thread);
  // protocolsFound() follows. Called by itself a moment after the list is
  // edited, and when the dialog is shown.
  void CheckWorkers();

 signals:
  // The protocols of the list `workers` were found (protocols_label()).
  void protocolsFound(const QStringList& workers);
  // The capture started writing into `session_dir` (the folder may not
  // exist yet); the window follows it while the files grow.
  void started(const QString& session_dir);
  // The capture ended with at least one complete or partial file.
  void captured(const QString& session_dir);
  // The capture ended (successfully, cancelled or failed).
  void finishedCapture(bool any_file);

 protected:
  void reject() override;
  void showEvent(QShowEvent* event) override;

 private:
  struct Outcome;
  void SetRunning(bool running);
  void OnProgress(int workers, int streaming, int finished, int failed,
                  qulonglong bytes, qulonglong events, qlonglong elapsed_ms);
  void OnFinished(const std::shared_ptr<Outcome>& outcome);
  void StopAndJoin();
  void OnProtocols(const QStringList& workers, const QStringList& lines,
                   int xprof_workers);

  QRadioButton* workers_radio_;
  QRadioButton* job_radio_;
  QLineEdit* workers_;
  QLineEdit* job_;
  QSpinBox* duration_;
  QLineEdit* logdir_;
  QPushButton* browse_;
  QLineEdit* session_;
  QLineEdit* token_;
  QProgressBar* progress_;
  QLabel* status_;
  QPlainTextEdit* errors_;
  QPushButton* start_;
  QPushButton* cancel_;
  QLabel* protocols_;
  QGroupBox* xprof_box_;
  QComboBox* host_level_;
  QComboBox* device_level_;
  QComboBox* python_level_;
  QComboBox* align_;
  QCheckBox* also_xplane_;
  QTimer* check_timer_;
  // One check at a time; a list edited meanwhile is checked after it.
  std::thread check_thread_;
  bool checking_ = false;
  bool check_again_ = false;
  bool running_ = false;
  int duration_ms_ = 0;
  QString session_dir_;
  std::shared_ptr<std::atomic<bool>> cancel_flag_;
  std::thread thread_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_CAPTURE_DIALOG_H_
