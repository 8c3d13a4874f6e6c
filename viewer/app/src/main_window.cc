#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDeadlineTimer>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QThread>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "capture_dialog.h"
#include "details_panel.h"
#include "event_pump.h"
#include "flame_graph_widget.h"
#include "job_doctor_view.h"
#include "live_session.h"
#include "mesh_view.h"
#include "pod_panel.h"
#include "query_panel.h"
#include "search_bar.h"
#include "stats_panel.h"
#include "steps_panel.h"
#include "time_format.h"
#include "timeline_widget.h"
#include "trace_loader.h"

namespace podscope::viewer::app {
namespace {

QString FileName(const std::string& path) {
  return QFileInfo(QString::fromStdString(path)).fileName();
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setObjectName("mainWindow");
  setWindowTitle("Podscope");
  setAcceptDrops(true);
  resize(1600, 1000);
  loader_ = new TraceLoader(this);
  BuildCentral();
  BuildDocks();
  BuildStatusBar();
  ConnectPanels();
  BuildMenus();
  timeline_->setFocus();
}

void MainWindow::BuildBanner() {
  banner_ = new QFrame;
  banner_->setObjectName("banner");
  auto* banner_row = new QHBoxLayout(banner_);
  banner_row->setContentsMargins(10, 6, 6, 6);
  banner_text_ = new QLabel;
  banner_text_->setObjectName("banner.text");
  banner_text_->setWordWrap(true);
  banner_text_->setTextFormat(Qt::RichText);
  banner_text_->setTextInteractionFlags(Qt::TextSelectableByMouse |
                                        Qt::LinksAccessibleByMouse);
  banner_text_->setOpenExternalLinks(false);
  connect(banner_text_, &QLabel::linkActivated, this,
          [this](const QString& link) {
            if (link == "doctor:verdict") ShowDoctorVerdict();
          });
  banner_row->addWidget(banner_text_, 1);
  auto* close_banner = new QToolButton;
  close_banner->setText("✕");
  close_banner->setToolTip(tr("Hide this message"));
  close_banner->setAutoRaise(true);
  banner_row->addWidget(close_banner, 0, Qt::AlignTop);
  connect(close_banner, &QToolButton::clicked, banner_, &QWidget::hide);
  banner_->hide();
}

void MainWindow::BuildCentral() {
  auto* central = new QWidget;
  auto* column = new QVBoxLayout(central);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(0);
  BuildBanner();
  column->addWidget(banner_);

  timeline_ = new TimelineWidget;
  timeline_->SetDetailLoader(
      [this](const std::vector<ProcessId>& p) { LoadDetail(p); });
  search_ = new SearchBar(timeline_);
  column->addWidget(search_);
  column->addWidget(timeline_, 1);
  setCentralWidget(central);
}

void MainWindow::BuildDocks() {
  details_ = new DetailsPanel;
  stats_ = new StatsPanel;
  flame_ = new FlameGraphWidget;
  steps_ = new StepsPanel;
  pod_ = new PodPanel;
  query_ = new QueryPanel;
  auto dock = [this](QWidget* w, const QString& title, const char* name,
                     Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  QDockWidget* details_dock =
      dock(details_, tr("Details"), "dock.details", Qt::RightDockWidgetArea);
  QDockWidget* stats_dock =
      dock(stats_, tr("Statistics"), "dock.stats", Qt::BottomDockWidgetArea);
  QDockWidget* flame_dock =
      dock(flame_, tr("Flame graph"), "dock.flame", Qt::BottomDockWidgetArea);
  QDockWidget* steps_dock =
      dock(steps_, tr("Steps"), "dock.steps", Qt::BottomDockWidgetArea);
  tabifyDockWidget(stats_dock, flame_dock);
  tabifyDockWidget(flame_dock, steps_dock);
  QDockWidget* pod_dock =
      dock(pod_, tr("Pod"), "dock.pod", Qt::BottomDockWidgetArea);
  tabifyDockWidget(steps_dock, pod_dock);
  QDockWidget* query_dock =
      dock(query_, tr("Query"), "dock.query", Qt::BottomDockWidgetArea);
  tabifyDockWidget(pod_dock, query_dock);
  stats_dock->raise();
  resizeDocks({details_dock}, {380}, Qt::Horizontal);
  resizeDocks({stats_dock}, {260}, Qt::Vertical);
}

void MainWindow::BuildStatusBar() {
  status_ = new QLabel(tr("No trace open"));
  status_->setObjectName("status.text");
  statusBar()->addWidget(status_, 1);
  progress_ = new QProgressBar;
  progress_->setObjectName("status.progress");
  progress_->setMaximumWidth(320);
  progress_->hide();
  statusBar()->addPermanentWidget(progress_);
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setObjectName("status.cancel");
  cancel_->hide();
  statusBar()->addPermanentWidget(cancel_);
  connect(cancel_, &QPushButton::clicked, loader_, &TraceLoader::Cancel);
}

void MainWindow::ConnectPanels() {
  connect(loader_, &TraceLoader::progress, this,
          [this](qulonglong done, qulonglong total, qulonglong events) {
            progress_->setRange(
                0, static_cast<int>(std::max<qulonglong>(total, 1)));
            progress_->setValue(static_cast<int>(done));
            progress_->setFormat(tr("%1 of %2 files · %3 M events")
                                     .arg(done)
                                     .arg(total)
                                     .arg(events / 1e6, 0, 'f', 1));
          });
  connect(loader_, &TraceLoader::finished, this, &MainWindow::OnLoadFinished);
  connect(loader_, &TraceLoader::overviewsRefined, this,
          &MainWindow::OnOverviewsRefined);
  connect(timeline_, &TimelineWidget::selectionChanged, this, [this] {
    details_->ShowEvent(timeline_->selected());
    pod_->ShowSelection(timeline_->selected());
  });
  connect(pod_, &PodPanel::eventRequested, timeline_,
          &TimelineWidget::ZoomToEvent);
  connect(pod_, &PodPanel::timesRequested, timeline_,
          &TimelineWidget::ZoomToTimes);
  connect(query_, &QueryPanel::eventRequested, timeline_,
          &TimelineWidget::ZoomToEvent);
  connect(pod_, &PodPanel::peersChanged, timeline_,
          &TimelineWidget::SetHighlighted);
  connect(timeline_, &TimelineWidget::rangeChanged, this,
          &MainWindow::UpdateRangeConsumers);
  connect(timeline_, &TimelineWidget::findRequested, search_,
          &SearchBar::FocusField);
  connect(details_, &DetailsPanel::followRequested, this,
          [this](EventRef e) { timeline_->Select(e, /*reveal=*/true); });
  connect(steps_, &StepsPanel::stepRequested, this,
          [this](EventRef e, qint64 start, qint64 end) {
            timeline_->Select(e, /*reveal=*/true);
            timeline_->ZoomToTimes(start, end);
          });
  connect(steps_, &StepsPanel::stepsChanged, this,
          [this] { timeline_->SetSteps(steps_->bands()); });
}

MainWindow::~MainWindow() = default;

QSettings MainWindow::Settings() {
  return QSettings("podscope", "podscope-viewer");
}

QString MainWindow::OpenFileFilter() {
  return tr("Traces (*.podtrace *.xplane.pb *.json *.json.gz);;All files (*)");
}

CaptureDialog* MainWindow::ShowCaptureDialog() {
  if (capture_dialog_ == nullptr) {
    capture_dialog_ = new CaptureDialog(this);
    // The capture's files are shown while they grow; when it ends they
    // are read once more (with the clock offsets measured at the end).
    connect(capture_dialog_, &CaptureDialog::started, this,
            [this](const QString& dir) {
              FollowPath(dir);
              // A job's capture: its ranks' health beside the timeline,
              // read from its coordinator while the capture runs.
              const CaptureRequestFields f = capture_dialog_->fields();
              if (!f.job.isEmpty()) {
                pod_->job_doctor()->Watch(f.job, f.token);
                pod_->tabs()->setCurrentWidget(pod_->job_doctor());
              }
            });
    connect(capture_dialog_, &CaptureDialog::captured, this,
            [this](const QString& dir) {
              if (live_ != nullptr && live_->path() == dir) {
                StopFollowing();
              } else {
                OpenPath(dir);
              }
            });
    connect(capture_dialog_, &CaptureDialog::finishedCapture, this,
            [this](bool any_file) {
              pod_->job_doctor()->StopWatching();
              if (!any_file && live_ != nullptr) StopFollowing();
            });
  }
  capture_dialog_->show();
  capture_dialog_->raise();
  capture_dialog_->activateWindow();
  return capture_dialog_;
}

void MainWindow::OpenPath(const QString& path, const QString& session) {
  if (live_ != nullptr) StopFollowing();
  load_error_.clear();
  status_->setText(tr("Loading %1…").arg(path));
  progress_->setRange(0, 0);  // busy until the first report
  progress_->setFormat(tr("opening…"));
  progress_->show();
  cancel_->show();
  loader_->Start(path, session);
}

bool MainWindow::loading() const { return loader_->busy(); }

bool MainWindow::WaitUntilIdle(int timeout_ms) {
  return PumpEventsWhile(
      [this] {
        return loading() || loader_->refining() || stats_->busy() ||
               flame_->busy() || steps_->busy() || pod_->busy();
      },
      timeout_ms);
}

void MainWindow::OnLoadFinished() {
  progress_->hide();
  cancel_->hide();
  const TraceLoader::Result& r = loader_->last_result();
  if (!r.store) {
    if (r.cancelled) {
      status_->setText(
          store_ ? tr("Loading cancelled; still showing %1").arg(path_)
                 : tr("Loading cancelled"));
      emit loaded(false);
      return;
    }
    load_error_ = r.error;
    status_->setText(tr("Could not open %1").arg(r.path));
    ShowBanner(tr("<b>Could not open %1</b><br>%2")
                   .arg(r.path.toHtmlEscaped(),
                        r.error.toHtmlEscaped().replace("\n", "<br>")),
               true);
    emit loaded(false);
    return;
  }
  SetStore(r.store, r.path, /*live=*/false, r.doctor);
  loaded_store_ = r.store;
  AddRecent(r.path);
  const TraceStore& s = *store_;
  QString text = tr("%1 · %2 hosts · %3 processes · %4 events · %5 · "
                    "loaded in %6 s")
                     .arg(QString::fromStdString(s.session().name))
                     .arg(s.hosts().size())
                     .arg(s.processes().size())
                     .arg(s.session_event_count())
                     .arg(QString::fromStdString(
                         FormatDuration(s.last_ns() - s.first_ns())))
                     .arg(r.seconds, 0, 'f', 2);
  if (s.is_overview()) {
    text += tr(" · one row per host: expand a host to load its events");
  } else if (!timeline_->first_screen_fits()) {
    text +=
        tr(" · View › Ranks Side by Side and Compact Rows show every "
           "rank on one screen");
  } else if (timeline_->layout().ranks_side_by_side()) {
    text +=
        tr(" · ranks side by side: main threads and device streams "
           "(View › Ranks Side by Side shows every thread)");
  }
  status_->setText(text);
  emit loaded(true);
}

void MainWindow::OnOverviewsRefined() {
  TraceLoader::Refined r = loader_->TakeRefined();
  if (!loaded_store_ || loaded_store_ != store_ || r.store != loaded_store_) {
    return;
  }
  // The store changes in place: nothing may read it meanwhile.
  stats_->WaitIdle();
  flame_->WaitIdle();
  steps_->WaitIdle();
  pod_->WaitIdle();
  loaded_store_->SetOverviews(r.overviews);
  timeline_->OverviewsChanged();
}

void MainWindow::LoadDetail(const std::vector<ProcessId>& processes) {
  if (!loaded_store_ || loaded_store_ != store_) return;
  // The store grows in place: nothing may read it meanwhile.
  stats_->WaitIdle();
  flame_->WaitIdle();
  steps_->WaitIdle();
  pod_->WaitIdle();
  QApplication::setOverrideCursor(Qt::WaitCursor);
  QElapsedTimer timer;
  timer.start();
  const uint64_t before = loaded_store_->event_count();
  const absl::Status s = loaded_store_->LoadDetail(processes);
  QApplication::restoreOverrideCursor();
  status_->setText(tr("loaded %1 events of %2 process(es) in %3 s · %4 of "
                      "%5 events in memory")
                       .arg(loaded_store_->event_count() - before)
                       .arg(processes.size())
                       .arg(timer.elapsed() / 1000.0, 0, 'f', 2)
                       .arg(loaded_store_->event_count())
                       .arg(loaded_store_->session_event_count()));
  if (!s.ok()) {
    ShowBanner(tr("<b>Could not load a host's events</b><br>%1")
                   .arg(QString::fromStdString(std::string(s.message()))
                            .toHtmlEscaped()),
               true);
  }
  // The panels that compute in the background start over with the events
  // now loaded.
  stats_->SetStore(store_);
  flame_->SetStore(store_);
  steps_->SetStore(store_);
  pod_->SetStore(store_);
  query_->SetStore(store_);
  UpdateRangeConsumers();
}

void MainWindow::SetStore(std::shared_ptr<const TraceStore> store,
                          const QString& path, bool live,
                          std::shared_ptr<const DoctorView> doctor) {
  store_ = std::move(store);
  doctor_ = std::move(doctor);
  path_ = path;
  setWindowTitle(tr("%1 — Podscope").arg(QFileInfo(path).fileName()));
  // The panels first: the timeline's new store resets the range, which they
  // follow.
  details_->SetStore(store_);
  search_->SetStore(store_);
  std::shared_ptr<const TraceStore> background = live ? nullptr : store_;
  background_panels_live_ = false;
  stats_->SetStore(background);
  flame_->SetStore(background);
  steps_->SetStore(background);
  pod_->SetStore(background);
  query_->SetStore(background);
  timeline_->SetStore(store_);
  timeline_->SetDoctorMarks(doctor_ ? doctor_->marks
                                    : std::vector<DoctorMark>{});
  UpdateSessionMenu();
  UpdateBanner();
}

void MainWindow::UpdateBanner() {
  // What the user must know about the data: files that failed or were
  // damaged, clocks that could not be aligned, events dropped while
  // recording.
  bool failed = false;
  QStringList lines = DoctorBannerLines(&failed);
  size_t files = store_->processes().size();
  for (const LoadProblem& p : store_->problems()) {
    if (!p.loaded) ++files;
  }
  for (const LoadProblem& p : store_->problems()) {
    const QString name = FileName(p.path).toHtmlEscaped();
    const QString why = QString::fromStdString(p.message).toHtmlEscaped();
    if (!p.loaded) {
      failed = true;
      lines << tr("<b>%1 could not be read</b> and is not shown: %2. The "
                  "other %3 of %4 files are shown.")
                   .arg(name, why)
                   .arg(store_->processes().size())
                   .arg(files);
    } else {
      // The wording is RecoveryReport::Describe's, as in `podscope check`.
      lines << tr("<b>%1 is damaged</b>; showing what could be recovered: "
                  "%2.")
                   .arg(name, why);
    }
  }
  if (store_->processes().size() > 1) {
    for (const ProcessInfo& p : store_->processes()) {
      if (!p.clock_aligned && p.events > 0) {
        lines << tr("%1 (pid %2) has no clock offsets: its times are its own "
                    "clock's and may not line up with the other hosts.")
                     .arg(QString::fromStdString(p.host_name).toHtmlEscaped())
                     .arg(p.pid);
      }
    }
  }
  uint64_t dropped = 0;
  for (const ProcessInfo& p : store_->processes()) dropped += p.dropped;
  if (dropped > 0) {
    lines << tr("%1 events were dropped while recording (buffers were full); "
                "tracks that lost events say so.")
                 .arg(dropped);
  }
  if (lines.isEmpty()) {
    banner_->hide();
  } else {
    ShowBanner(lines.join("<br>"), failed);
  }
}

QStringList MainWindow::DoctorBannerLines(bool* failed) const {
  QStringList lines;
  if (!doctor_) return lines;
  const JournalVerdict& v = doctor_->verdict;
  if (!v.sentence.empty()) {
    const QString sentence = QString::fromStdString(v.sentence).toHtmlEscaped();
    lines << (doctor_->marks.empty()
                  ? tr("<b>Job doctor (%1):</b> %2")
                        .arg(QString::fromStdString(v.kind).toHtmlEscaped(),
                             sentence)
                  : tr("<b>Job doctor (%1):</b> <a href=\"doctor:verdict\">%2"
                       "</a> (click to show it on the timeline)")
                        .arg(QString::fromStdString(v.kind).toHtmlEscaped(),
                             sentence));
  }
  for (const std::string& p : doctor_->problems) {
    *failed = true;
    lines << tr("<b>Job doctor:</b> %1. The traces are shown without it.")
                 .arg(QString::fromStdString(p).toHtmlEscaped());
  }
  return lines;
}

void MainWindow::ShowDoctorVerdict() {
  if (!doctor_) return;
  if (auto span = doctor_->span()) {
    timeline_->ZoomToTimes(span->first, span->second);
  }
}

void MainWindow::ShowBanner(const QString& html, bool error) {
  banner_text_->setText(html);
  banner_->setStyleSheet(
      error ? "#banner { background: #fde7e9; border-bottom: 1px solid "
              "#d9534f; }"
            : "#banner { background: #fff4ce; border-bottom: 1px solid "
              "#e0b800; }");
  banner_->show();
}

QString MainWindow::banner_text() const {
  return banner_->isHidden() ? QString() : banner_text_->text();
}

bool MainWindow::banner_shown() const { return !banner_->isHidden(); }

void MainWindow::UpdateRangeConsumers() {
  if (!store_) return;
  if (auto r = timeline_->range()) {
    stats_->SetRange(r->first, r->second, false);
    flame_->SetRange(r->first, r->second);
  } else {
    stats_->SetRange(store_->first_ns(), store_->last_ns() + 1, true);
    flame_->SetRange(store_->first_ns(), store_->last_ns() + 1);
  }
}

void MainWindow::SaveImage() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save an image of the window"),
                                   "podscope.png", tr("PNG images (*.png)"));
  if (path.isEmpty()) return;
  if (!grab().save(path)) {
    QMessageBox::warning(this, tr("Save image"),
                         tr("Could not write %1").arg(path));
  }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) {
    for (const QUrl& url : event->mimeData()->urls()) {
      if (url.isLocalFile()) {
        event->acceptProposedAction();
        return;
      }
    }
  }
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (url.isLocalFile()) {
      OpenPath(url.toLocalFile());
      event->acceptProposedAction();
      return;
    }
  }
}

void MainWindow::RestoreWindowState() {
  QSettings settings = Settings();
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  restore_state_on_close_ = true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  loader_->Cancel();
  if (restore_state_on_close_) {
    QSettings settings = Settings();
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
  }
  QMainWindow::closeEvent(event);
}

}  // namespace podscope::viewer::app
