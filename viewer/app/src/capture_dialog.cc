#include "capture_dialog.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>
#include <string>
#include <vector>

#include "podscope/base/human_format.h"
#include "podscope/job/profilers.h"
#include "podscope/profiler/capture.h"
#include "time_format.h"

namespace podscope::viewer::app {
namespace {

QString Bytes(qulonglong bytes) {
  return QString::fromStdString(base::FormatBytes(static_cast<double>(bytes)));
}

QString Millis(qlonglong ms) {
  return QString::fromStdString(FormatDuration(ms * 1'000'000));
}

// "tpu-host-1: lined up by collectives, ±2.1 µs" for an XProf worker.
QString DescribeAlignment(const profiler::WorkerResult& w) {
  QString text =
      CaptureDialog::tr("%1: lined up by %2")
          .arg(QString::fromStdString(w.host.empty() ? w.address : w.host),
               QString::fromStdString(w.alignment));
  if (w.alignment_uncertainty_ns >= 0) {
    text += QStringLiteral(", ±") +
            QString::fromStdString(FormatDuration(w.alignment_uncertainty_ns));
  }
  if (!w.alignment_note.empty()) {
    text += QStringLiteral(" (") + QString::fromStdString(w.alignment_note) +
            QStringLiteral(")");
  }
  return text;
}

QComboBox* LevelBox(const QStringList& names, int value) {
  auto* box = new QComboBox;
  for (int i = 0; i < names.size(); ++i) {
    box->addItem(QStringLiteral("%1 · %2").arg(i).arg(names[i]), i);
  }
  box->setCurrentIndex(value);
  return box;
}

}  // namespace

struct CaptureDialog::Outcome {
  bool ok = false;  // CaptureWorkers ran (workers may still have failed)
  QString error;    // why it did not run
  bool cancelled = false;
  QString session_dir;
  int asked = 0;
  int answered = 0;
  int files = 0;  // written, complete or not
  qulonglong events = 0;
  qulonglong bytes = 0;
  QStringList worker_errors;
  // How the XProf workers' clocks were lined up, one line each.
  QStringList xprof_alignments;
};

namespace {

// With a job, its ranks become the workers (and go into the manifest). A
// job whose every rank can write its own file is recorded through its
// coordinator (one call from here); otherwise every rank streams here.
absl::StatusOr<profiler::CaptureResult> ResolveJobAndCapture(
    const std::string& job, profiler::CaptureOptions options) {
  if (!job.empty()) {
    std::string coordinator;
    if (absl::Status s =
            podscope::job::ResolveJobWorkers(job, &options, &coordinator);
        !s.ok()) {
      return absl::Status(s.code(),
                          "job " + job + ": " + std::string(s.message()));
    }
    profiler::CaptureOptions relayed = options;
    podscope::job::RelayThroughCoordinator(coordinator, &relayed);
    auto result = profiler::CaptureWorkers(relayed);
    if (result.ok()) return result;
    if (!podscope::job::CaptureFromHereInstead(result.status(),
                                               options.worker_writes)) {
      return absl::Status(
          result.status().code(),
          "job " + job + ": " + std::string(result.status().message()));
    }
  }
  return profiler::CaptureWorkers(options);
}

}  // namespace

QString DescribeWorkerProtocol(const QString& protocol, const QString& host,
                               qlonglong pid, const QString& error) {
  if (protocol == QLatin1String("podscope")) {
    return CaptureDialog::tr("Podscope (%1, pid %2)").arg(host).arg(pid);
  }
  if (protocol == QLatin1String("xprof")) {
    return CaptureDialog::tr(
        "XProf's profiler service (JAX, TensorFlow, PyTorch/XLA)");
  }
  return error;
}

QStringList ParseWorkerList(const QString& text) {
  QStringList out;
  for (const QString& part : text.split(QLatin1Char(','))) {
    const QString w = part.trimmed();
    if (!w.isEmpty()) out << w;
  }
  return out;
}

CaptureDialog::CaptureDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Capture"));
  workers_ = new QLineEdit(QStringLiteral("localhost:9012"));
  workers_->setToolTip(
      tr("The profiler servers to record, as host:port, separated by commas"));
  job_ = new QLineEdit;
  job_->setPlaceholderText(tr("or a job's coordinator, host:port"));
  job_->setToolTip(
      tr("The coordinator of a job (MASTER_ADDR:MASTER_PORT): every rank "
         "that serves its profiler is recorded"));
  duration_ = new QSpinBox;
  duration_->setRange(1, 3'600'000);
  duration_->setValue(2000);
  duration_->setSuffix(tr(" ms"));
  duration_->setSingleStep(500);
  logdir_ = new QLineEdit(
      QDir(QDir::homePath()).filePath(QStringLiteral("podscope-traces")));
  browse_ = new QPushButton(tr("Browse…"));
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("Log directory"), logdir_->text());
    if (!dir.isEmpty()) logdir_->setText(dir);
  });
  auto* logdir_row = new QHBoxLayout;
  logdir_row->addWidget(logdir_, 1);
  logdir_row->addWidget(browse_);
  session_ = new QLineEdit;
  session_->setPlaceholderText(tr("a UTC timestamp"));
  token_ = new QLineEdit;
  token_->setEchoMode(QLineEdit::Password);
  token_->setPlaceholderText(
      tr("$PODSCOPE_PROFILER_TOKEN, else your token file on loopback"));

  // Workers or a job: one of the two, chosen by its button, the other's
  // field disabled. Labels carry no mnemonics: some styles show the "&".
  workers_radio_ = new QRadioButton(tr("Workers:"));
  workers_radio_->setObjectName("capture.workers_radio");
  workers_radio_->setChecked(true);
  job_radio_ = new QRadioButton(tr("Job:"));
  job_radio_->setObjectName("capture.job_radio");
  auto* source = new QButtonGroup(this);
  source->addButton(workers_radio_);
  source->addButton(job_radio_);
  job_->setEnabled(false);
  connect(workers_radio_, &QRadioButton::toggled, this, [this](bool on) {
    workers_->setEnabled(on && !running_);
    job_->setEnabled(!on && !running_);
  });
  auto* form = new QFormLayout;
  form->addRow(workers_radio_, workers_);
  form->addRow(job_radio_, job_);
  form->addRow(tr("Duration:"), duration_);
  form->addRow(tr("Log directory:"), logdir_row);
  form->addRow(tr("Session:"), session_);
  form->addRow(tr("Token:"), token_);

  // What each worker speaks, found as its address is typed.
  protocols_ = new QLabel;
  protocols_->setObjectName("capture.protocols");
  protocols_->setWordWrap(true);
  protocols_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  protocols_->setVisible(false);
  check_timer_ = new QTimer(this);
  check_timer_->setSingleShot(true);
  check_timer_->setInterval(600);
  connect(check_timer_, &QTimer::timeout, this, &CaptureDialog::CheckWorkers);
  connect(workers_, &QLineEdit::textEdited, this,
          [this] { check_timer_->start(); });
  connect(workers_radio_, &QRadioButton::toggled, this, [this](bool on) {
    if (on) check_timer_->start();
    protocols_->setVisible(on && !protocols_->text().isEmpty());
    if (!on) xprof_box_->setVisible(false);
  });

  // XProf's own settings, as its capture dialog has them: shown while a
  // worker of the list speaks XProf.
  xprof_box_ =
      new QGroupBox(tr("XProf workers (JAX, TensorFlow, PyTorch/XLA)"));
  xprof_box_->setObjectName("capture.xprof");
  host_level_ =
      LevelBox({tr("off"), tr("critical"), tr("info"), tr("verbose")}, 2);
  host_level_->setToolTip(tr("XProf's host tracer level (TraceMe events)"));
  device_level_ = LevelBox({tr("off"), tr("on")}, 1);
  device_level_->setToolTip(tr("XProf's device tracer level (GPU, TPU)"));
  python_level_ = LevelBox({tr("off"), tr("on")}, 0);
  python_level_->setToolTip(tr("XProf's Python tracer level"));
  align_ = new QComboBox;
  align_->addItem(tr("best available"), QStringLiteral("best"));
  align_->addItem(tr("by collectives"), QStringLiteral("collectives"));
  align_->addItem(tr("by the request's round trip"), QStringLiteral("rpc"));
  align_->addItem(tr("wall clocks as they are"), QStringLiteral("wallclock"));
  align_->setToolTip(
      tr("How the XProf hosts' clocks are lined up: their collectives' ends "
         "when every host ran the same ones, else the Profile call's round "
         "trip, else their wall clocks"));
  also_xplane_ = new QCheckBox(tr("Also keep each host's .xplane.pb"));
  also_xplane_->setToolTip(
      tr("<logdir>/plugins/profile/<session>/<host>.xplane.pb, the run "
         "folder TensorBoard and XProf read"));
  auto* xprof_form = new QFormLayout(xprof_box_);
  xprof_form->addRow(tr("Host tracer level:"), host_level_);
  xprof_form->addRow(tr("Device tracer level:"), device_level_);
  xprof_form->addRow(tr("Python tracer level:"), python_level_);
  xprof_form->addRow(tr("Line up hosts:"), align_);
  xprof_form->addRow(also_xplane_);
  xprof_box_->setVisible(false);

  // Shown while a capture records: an empty bar before says nothing.
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setTextVisible(false);
  progress_->setVisible(false);
  status_ =
      new QLabel(tr("Records every worker at once into "
                    "<logdir>/<session>/, then opens it."));
  status_->setWordWrap(true);
  errors_ = new QPlainTextEdit;
  errors_->setReadOnly(true);
  errors_->setMaximumBlockCount(1000);
  errors_->setPlaceholderText(tr("Problems with workers are listed here."));
  errors_->setVisible(false);

  start_ = new QPushButton(tr("Start"));
  start_->setDefault(true);
  cancel_ = new QPushButton(tr("Close"));
  auto* buttons = new QDialogButtonBox;
  buttons->addButton(start_, QDialogButtonBox::ActionRole);
  buttons->addButton(cancel_, QDialogButtonBox::RejectRole);
  connect(start_, &QPushButton::clicked, this, &CaptureDialog::StartCapture);
  connect(cancel_, &QPushButton::clicked, this, &CaptureDialog::CancelOrClose);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(protocols_);
  layout->addWidget(xprof_box_);
  layout->addWidget(progress_);
  layout->addWidget(status_);
  layout->addWidget(errors_, 1);
  layout->addWidget(buttons);
  resize(520, 360);
}

CaptureDialog::~CaptureDialog() {
  StopAndJoin();
  if (check_thread_.joinable()) check_thread_.join();
}

void CaptureDialog::StopAndJoin() {
  if (cancel_flag_) cancel_flag_->store(true);
  if (thread_.joinable()) thread_.join();
}

void CaptureDialog::showEvent(QShowEvent* event) {
  QDialog::showEvent(event);
  if (workers_radio_->isChecked() && !running_) CheckWorkers();
}

void CaptureDialog::CheckWorkers() {
  if (!workers_radio_->isChecked()) return;
  if (checking_) {
    check_again_ = true;
    return;
  }
  const QStringList workers = ParseWorkerList(workers_->text());
  if (workers.isEmpty()) {
    OnProtocols(workers, {}, 0);
    return;
  }
  if (check_thread_.joinable()) check_thread_.join();
  checking_ = true;
  check_again_ = false;
  profiler::ConnectOptions connect;
  connect.token = token_->text().toStdString();
  connect.connect_timeout_ms = 1500;
  std::vector<std::string> addresses;
  for (const QString& w : workers) addresses.push_back(w.toStdString());
  // Joined before the dialog goes away; its answer comes back queued.
  check_thread_ = std::thread([this, workers, addresses, connect] {
    const std::vector<profiler::WorkerProtocol> found =
        profiler::FindWorkerProtocols(addresses, connect);
    QStringList lines;
    int xprof = 0;
    for (const profiler::WorkerProtocol& p : found) {
      const QString protocol = QString::fromStdString(p.protocol);
      const QString text = DescribeWorkerProtocol(
          protocol, QString::fromStdString(p.host),
          static_cast<qlonglong>(p.pid), QString::fromStdString(p.error));
      lines << (p.protocol.empty() ? text
                                   : QString::fromStdString(p.address) +
                                         QStringLiteral(": ") + text);
      xprof += p.protocol == "xprof" ? 1 : 0;
    }
    QMetaObject::invokeMethod(
        this,
        [this, workers, lines, xprof] { OnProtocols(workers, lines, xprof); },
        Qt::QueuedConnection);
  });
}

void CaptureDialog::OnProtocols(const QStringList& workers,
                                const QStringList& lines, int xprof_workers) {
  checking_ = false;
  if (check_thread_.joinable()) check_thread_.join();
  // The list changed while it was checked: only the newest one counts.
  if (check_again_ || workers != ParseWorkerList(workers_->text())) {
    check_again_ = false;
    CheckWorkers();
    return;
  }
  protocols_->setText(lines.join(QLatin1Char('\n')));
  protocols_->setVisible(!lines.isEmpty() && workers_radio_->isChecked());
  xprof_box_->setVisible(xprof_workers > 0 && workers_radio_->isChecked());
  emit protocolsFound(workers);
}

CaptureRequestFields CaptureDialog::fields() const {
  CaptureRequestFields f;
  if (job_radio_->isChecked()) {
    f.job = job_->text().trimmed();
  } else {
    f.workers = ParseWorkerList(workers_->text());
  }
  f.duration_ms = duration_->value();
  f.logdir = logdir_->text().trimmed();
  f.session = session_->text().trimmed();
  f.token = token_->text();
  f.host_tracer_level = host_level_->currentData().toInt();
  f.device_tracer_level = device_level_->currentData().toInt();
  f.python_tracer_level = python_level_->currentData().toInt();
  f.align = align_->currentData().toString();
  f.also_xplane = also_xplane_->isChecked();
  return f;
}

QString CaptureDialog::status_text() const { return status_->text(); }

QString CaptureDialog::errors_text() const { return errors_->toPlainText(); }

void CaptureDialog::SetRunning(bool running) {
  running_ = running;
  for (QWidget* w : std::initializer_list<QWidget*>{
           workers_radio_, job_radio_, duration_, logdir_, browse_, session_,
           token_, start_, xprof_box_}) {
    w->setEnabled(!running);
  }
  workers_->setEnabled(!running && workers_radio_->isChecked());
  job_->setEnabled(!running && job_radio_->isChecked());
  cancel_->setText(running ? tr("Cancel") : tr("Close"));
}

void CaptureDialog::StartCapture() {
  if (running_) return;
  const CaptureRequestFields f = fields();
  errors_->clear();
  errors_->setVisible(false);
  if (f.workers.isEmpty() && f.job.isEmpty()) {
    status_->setText(job_radio_->isChecked()
                         ? tr("Name the job's coordinator (host:port).")
                         : tr("Name at least one worker (host:port)."));
    return;
  }
  if (f.logdir.isEmpty()) {
    status_->setText(tr("Choose a log directory."));
    return;
  }
  if (thread_.joinable()) thread_.join();  // the previous capture's thread

  profiler::CaptureOptions options;
  for (const QString& w : f.workers) options.workers.push_back(w.toStdString());
  options.logdir = QDir::cleanPath(f.logdir).toStdString();
  options.duration_ms = f.duration_ms;
  // The session's name is chosen here when the form leaves it empty (as
  // the capture client would), so that its folder is known before the
  // capture starts and the window can show the files as they grow.
  options.session =
      (f.session.isEmpty()
           ? QDateTime::currentDateTimeUtc().toString("yyyyMMdd-HHmmss")
           : f.session)
          .toStdString();
  options.connect.token = f.token.toStdString();
  options.host_tracer_level = f.host_tracer_level;
  options.device_tracer_level = f.device_tracer_level;
  options.python_tracer_level = f.python_tracer_level;
  options.align = f.align.toStdString();
  options.also_xplane = f.also_xplane;
  cancel_flag_ = std::make_shared<std::atomic<bool>>(false);
  duration_ms_ = f.duration_ms;
  session_dir_.clear();
  progress_->setValue(0);
  progress_->setVisible(true);
  const std::string job = f.job.toStdString();
  status_->setText(job.empty()
                       ? tr("Connecting to %n worker(s)…", "",
                            static_cast<int>(f.workers.size()))
                       : tr("Asking the job at %1 for its ranks…").arg(f.job));
  SetRunning(true);
  emit started(QDir(QString::fromStdString(options.logdir))
                   .filePath(QString::fromStdString(options.session)));

  std::shared_ptr<std::atomic<bool>> cancel = cancel_flag_;
  options.cancel = cancel.get();
  options.progress = [this](const profiler::CaptureProgress& p) {
    QMetaObject::invokeMethod(
        this,
        [this, p] {
          OnProgress(p.workers, p.streaming, p.finished, p.failed, p.bytes,
                     p.events, p.elapsed_ms);
        },
        Qt::QueuedConnection);
  };
  // The thread is joined before the dialog goes away (destructor), so
  // `this` outlives it; its results come back as a queued call.
  thread_ = std::thread([this, options = std::move(options), job, cancel] {
    auto outcome = std::make_shared<Outcome>();
    auto result = ResolveJobAndCapture(job, options);
    if (!result.ok()) {
      outcome->error =
          QString::fromStdString(std::string(result.status().message()));
    } else {
      outcome->ok = true;
      outcome->cancelled = result->cancelled;
      outcome->session_dir = QString::fromStdString(result->session_dir);
      outcome->asked = static_cast<int>(result->workers.size());
      outcome->answered = result->answered();
      for (const profiler::WorkerResult& w : result->workers) {
        outcome->events += w.events;
        outcome->bytes += w.bytes;
        if (!w.path.empty() && w.bytes > 0) ++outcome->files;
        if (w.protocol == "xprof" && w.ok) {
          outcome->xprof_alignments << DescribeAlignment(w);
        }
        if (!w.ok) {
          outcome->worker_errors << QString::fromStdString(
              w.error.empty() ? w.address + ": failed" : w.error);
        }
      }
    }
    QMetaObject::invokeMethod(
        this, [this, outcome] { OnFinished(outcome); }, Qt::QueuedConnection);
  });
}

void CaptureDialog::OnProgress(int workers, int streaming, int finished,
                               int failed, qulonglong bytes, qulonglong events,
                               qlonglong elapsed_ms) {
  if (!running_) return;
  const bool stopping = cancel_flag_ && cancel_flag_->load();
  if (duration_ms_ > 0) {
    progress_->setValue(static_cast<int>(
        std::min<qlonglong>(1000, elapsed_ms * 1000 / duration_ms_)));
  }
  QString text = tr("%1 of %2 workers recording, %3 finished")
                     .arg(streaming)
                     .arg(workers)
                     .arg(finished);
  if (failed > 0) text += tr(" (%1 failed)").arg(failed);
  text += tr(" · %1 events · %2 · %3")
              .arg(events)
              .arg(Bytes(bytes))
              .arg(Millis(elapsed_ms));
  if (stopping) text = tr("Stopping… ") + text;
  status_->setText(text);
}

void CaptureDialog::OnFinished(const std::shared_ptr<Outcome>& outcome) {
  if (thread_.joinable()) thread_.join();
  SetRunning(false);
  // The bar only ever says "recording"; the outcome is in words.
  progress_->setVisible(false);
  if (!outcome->ok) {
    status_->setText(tr("Capture failed: %1").arg(outcome->error));
    emit finishedCapture(false);
    return;
  }
  const bool any_file = outcome->files > 0 || outcome->answered > 0;
  if (!any_file) {
    // Nothing recorded: a failure, and no session folder is left behind.
    status_->setText(
        outcome->asked == 1
            ? tr("Capture failed: the worker could not be recorded; no "
                 "session was written.")
            : tr("Capture failed: none of the %1 workers could be recorded; "
                 "no session was written.")
                  .arg(outcome->asked));
    errors_->setPlainText(outcome->worker_errors.join(QLatin1Char('\n')));
    errors_->setVisible(!outcome->worker_errors.isEmpty());
    emit finishedCapture(false);
    return;
  }
  session_dir_ = outcome->session_dir;
  QString text = outcome->cancelled ? tr("Cancelled. ") : QString();
  text += tr("%1 of %2 workers recorded · %3 events · %4 → %5")
              .arg(outcome->answered)
              .arg(outcome->asked)
              .arg(outcome->events)
              .arg(Bytes(outcome->bytes))
              .arg(outcome->session_dir);
  if (!outcome->xprof_alignments.isEmpty()) {
    text += QStringLiteral("\n") +
            tr("XProf hosts: %1")
                .arg(outcome->xprof_alignments.join(QStringLiteral("; ")));
  }
  status_->setText(text);
  if (!outcome->worker_errors.isEmpty()) {
    errors_->setPlainText(outcome->worker_errors.join(QLatin1Char('\n')));
    errors_->setVisible(true);
  }
  emit finishedCapture(true);
  emit captured(outcome->session_dir);
  // Everything worked: nothing left to read here, unless XProf hosts were
  // lined up (how, and how far to trust it, is worth reading).
  if (outcome->worker_errors.isEmpty() && !outcome->cancelled &&
      outcome->xprof_alignments.isEmpty()) {
    accept();
  }
}

void CaptureDialog::CancelOrClose() {
  if (running_) {
    if (cancel_flag_) cancel_flag_->store(true);
    status_->setText(
        tr("Stopping… the workers send the rest of their "
           "files."));
    return;
  }
  QDialog::reject();
}

void CaptureDialog::reject() {
  // Esc or the window's close button while recording: stop, do not hide a
  // capture that still runs.
  if (running_) {
    CancelOrClose();
    return;
  }
  QDialog::reject();
}

}  // namespace podscope::viewer::app
