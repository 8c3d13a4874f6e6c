// MainWindow's live part: following trace files while they are written
// (File › Capture…, podscope-viewer --follow DIR).
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

#include "flame_graph_widget.h"
#include "live_session.h"
#include "main_window.h"
#include "pod_panel.h"
#include "search_bar.h"
#include "stats_panel.h"
#include "steps_panel.h"
#include "time_format.h"
#include "timeline_widget.h"
#include "trace_loader.h"

namespace podscope::viewer::app {

void MainWindow::FollowPath(const QString& path) {
  if (live_ != nullptr) StopFollowing();
  loader_->Cancel();
  progress_->hide();
  cancel_->hide();
  load_error_.clear();
  live_ = new LiveSession(path, /*stop_when_all_final=*/false, this);
  // The store grows only while nothing computes from it in the background.
  live_->set_gate([this] {
    return !stats_->busy() && !flame_->busy() && !steps_->busy() &&
           !pod_->busy();
  });
  connect(live_, &LiveSession::grew, this, &MainWindow::OnLiveGrew);
  connect(live_, &LiveSession::ended, this, &MainWindow::OnLiveEnded);
  connect(live_, &LiveSession::failed, this, [this](const QString& why) {
    load_error_ = why;
    ShowBanner(tr("<b>Could not follow %1</b><br>%2")
                   .arg(live_->path().toHtmlEscaped(), why.toHtmlEscaped()),
               true);
  });
  status_->setText(tr("Following %1: waiting for trace files…").arg(path));
}

void MainWindow::StopFollowing() {
  if (live_ == nullptr) return;
  LiveSession* live = live_;
  live->Stop();  // reads once more; OnLiveEnded runs
  live_ = nullptr;
  live->deleteLater();
}

void MainWindow::OnLiveGrew() {
  if (live_ == nullptr) return;
  std::shared_ptr<const TraceStore> store = live_->store();
  if (store_ != store) {
    // Until a file shows up, what was open stays shown.
    if (store->processes().empty()) return;
    SetStore(store, live_->path(), /*live=*/true);
    AddRecent(live_->path());
    timeline_->SetFollowing(true);
    emit loaded(true);
  } else {
    if (background_panels_live_) {
      // They are idle (the gate let the refresh run): take the store back
      // until it stops growing.
      stats_->SetStore(nullptr);
      flame_->SetStore(nullptr);
      steps_->SetStore(nullptr);
      pod_->SetStore(nullptr);
      background_panels_live_ = false;
    }
    timeline_->StoreGrew();
    UpdateBanner();
  }
  if (live_->follower().all_final()) GiveStoreToBackgroundPanels();
  const TraceStore& s = *store_;
  status_->setText(tr("Live: %1 · %2 hosts · %3 processes · %4 events · %5%6")
                       .arg(QFileInfo(live_->path()).fileName())
                       .arg(s.hosts().size())
                       .arg(s.processes().size())
                       .arg(s.event_count())
                       .arg(QString::fromStdString(
                           FormatDuration(s.last_ns() - s.first_ns())))
                       .arg(timeline_->following() ? tr(" · following (End)")
                                                   : tr(" · End to follow")));
}

void MainWindow::OnLiveEnded() {
  LiveSession* live = qobject_cast<LiveSession*>(sender());
  if (live == nullptr) return;
  if (store_ != live->store()) {
    // No file ever showed up (a capture in which every worker failed):
    // the status stops saying it waits for them.
    status_->setText(tr("No trace files arrived in %1.").arg(live->path()));
    return;
  }
  GiveStoreToBackgroundPanels();
  const TraceStore& s = *store_;
  status_->setText(tr("%1 · %2 hosts · %3 processes · %4 events · %5 · "
                      "recording ended")
                       .arg(QFileInfo(live->path()).fileName())
                       .arg(s.hosts().size())
                       .arg(s.processes().size())
                       .arg(s.event_count())
                       .arg(QString::fromStdString(
                           FormatDuration(s.last_ns() - s.first_ns()))));
  UpdateBanner();
}

void MainWindow::GiveStoreToBackgroundPanels() {
  if (background_panels_live_ || !store_) return;
  background_panels_live_ = true;
  stats_->SetStore(store_);
  flame_->SetStore(store_);
  steps_->SetStore(store_);
  pod_->SetStore(store_);
  UpdateRangeConsumers();
}

}  // namespace podscope::viewer::app
