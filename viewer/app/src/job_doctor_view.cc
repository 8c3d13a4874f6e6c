#include "job_doctor_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QMetaObject>
#include <QPointer>
#include <QTableWidget>
#include <QVBoxLayout>
#include <chrono>
#include <memory>
#include <optional>

#include "podscope/job/doctor_report.h"

namespace podscope::viewer::app {
namespace {

QString Q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

JobDoctorView::JobDoctorView(QWidget* parent) : QWidget(parent) {
  setObjectName("pod.job");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  verdict_ = new QLabel(
      tr("Capture a job (File › Capture…, Job) to see its ranks' health "
         "here while it records."));
  verdict_->setObjectName("pod.job.verdict");
  verdict_->setWordWrap(true);
  verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(verdict_);
  table_ = new QTableWidget(0, 7);
  table_->setObjectName("pod.job.table");
  table_->setHorizontalHeaderLabels({tr("rank"), tr("host"), tr("pid"),
                                     tr("step"), tr("heartbeat"),
                                     tr("collective"), tr("scope")});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table_, 1);
}

JobDoctorView::~JobDoctorView() { StopWatching(); }

void JobDoctorView::Watch(const QString& address, const QString& token,
                          int interval_ms) {
  StopWatching();
  address_ = address;
  refreshes_ = 0;
  const uint64_t generation = ++generation_;
  verdict_->setText(tr("Asking the job's coordinator at %1…").arg(address));
  auto client = job::ConnectToJob(address.toStdString(), token.toStdString());
  if (!client.ok()) {
    ShowError(Q(std::string(client.status().message())));
    return;
  }
  stop_ = false;
  QPointer<JobDoctorView> self(this);
  client_ = *std::move(client);
  std::shared_ptr<job::CoordinationClient> c = client_;
  thread_ = std::thread([this, self, c, generation, interval_ms] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      auto view = c->JobState(absl::Seconds(2));
      if (absl::IsCancelled(view.status())) break;
      QMetaObject::invokeMethod(
          self.data(),
          [self, generation, view = std::move(view)] {
            if (!self || generation != self->generation_) return;
            if (view.ok()) {
              self->Show(*view);
            } else {
              self->ShowError(Q(std::string(view.status().message())));
            }
          },
          Qt::QueuedConnection);
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(interval_ms),
                     [this] { return stop_; });
    }
  });
}

void JobDoctorView::StopWatching() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  // A call in flight returns at once.
  if (client_) client_->Abort(absl::CancelledError("stopped watching"));
  if (thread_.joinable()) thread_.join();
  client_.reset();
}

void JobDoctorView::Show(const job::JobStateView& view) {
  QString text = tr("<b>Job at %1: %2</b>")
                     .arg(address_.toHtmlEscaped(),
                          Q(job::DoctorHeadline(view)).toHtmlEscaped());
  if (!view.verdict.empty()) {
    text += "<br>" + Q(view.verdict).toHtmlEscaped();
  }
  if (!view.job_status.ok() && view.job_status.message() != view.verdict) {
    text += "<br>" +
            tr("job failed: %1")
                .arg(Q(std::string(view.job_status.message())).toHtmlEscaped());
  }
  verdict_->setTextFormat(Qt::RichText);
  verdict_->setText(text);
  const std::vector<job::DoctorRow> rows = job::DoctorRows(view);
  table_->setRowCount(static_cast<int>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    const job::DoctorRow& r = rows[i];
    const QStringList cells = r.registered
                                  ? QStringList{QString::number(r.rank),
                                                Q(r.host),
                                                QString::number(r.pid),
                                                Q(r.step),
                                                Q(r.heartbeat),
                                                Q(r.collective),
                                                Q(r.scope)}
                                  : QStringList{QString::number(r.rank),
                                                tr("(not registered)"),
                                                "-",
                                                "-",
                                                "-",
                                                "-",
                                                "-"};
    for (int c = 0; c < cells.size(); ++c) {
      table_->setItem(static_cast<int>(i), c, new QTableWidgetItem(cells[c]));
    }
  }
  table_->resizeColumnsToContents();
  ++refreshes_;
  emit refreshed();
}

void JobDoctorView::ShowError(const QString& error) {
  verdict_->setTextFormat(Qt::PlainText);
  verdict_->setText(tr("The job's coordinator at %1 did not answer: %2")
                        .arg(address_, error));
  ++refreshes_;
  emit refreshed();
}

}  // namespace podscope::viewer::app
