// File › Capture…: records running profiler servers (podscope::profiler's
// capture client, as `podscope capture` does) into a session folder, off the
// GUI thread, with progress, per-worker errors and Cancel. started() names
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

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace podscope::viewer::app {

struct CaptureRequestFields {
  QStringList workers;  // host:port
  QString job;          // a job's coordinator (host:port): every rank
  int duration_ms = 2000;
  QString logdir;
  QString session;  // empty: a UTC timestamp
  QString token;    // empty: $PODSCOPE_PROFILER_TOKEN
};

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

 signals:
  // The capture started writing into `session_dir` (the folder may not
  // exist yet); the window follows it while the files grow.
  void started(const QString& session_dir);
  // The capture ended with at least one complete or partial file.
  void captured(const QString& session_dir);
  // The capture ended (successfully, cancelled or failed).
  void finishedCapture(bool any_file);

 protected:
  void reject() override;

 private:
  struct Outcome;
  void SetRunning(bool running);
  void OnProgress(int workers, int streaming, int finished, int failed,
                  qulonglong bytes, qulonglong events, qlonglong elapsed_ms);
  void OnFinished(const std::shared_ptr<Outcome>& outcome);
  void StopAndJoin();

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
  bool running_ = false;
  int duration_ms_ = 0;
  QString session_dir_;
  std::shared_ptr<std::atomic<bool>> cancel_flag_;
  std::thread thread_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_CAPTURE_DIALOG_H_
