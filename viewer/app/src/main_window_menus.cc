// MainWindow's menus: File (open, capture, recent files, sessions, save
// image, quit), View, Find and Help.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>

#include "compare_window.h"
#include "main_window.h"
#include "mesh_view.h"
#include "search_bar.h"
#include "timeline_widget.h"

namespace podscope::viewer::app {

void MainWindow::BuildMenus() {
  BuildFileMenu();
  BuildViewMenu();
  BuildFindAndHelpMenus();
}

CompareWindow* MainWindow::ShowCompare(const QString& baseline,
                                       const QString& candidate) {
  auto* window = new CompareWindow();
  window->setAttribute(Qt::WA_DeleteOnClose);
  window->show();
  window->Open(baseline, candidate);
  return window;
}

void MainWindow::BuildFileMenu() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open_file = file->addAction(tr("&Open File…"));
  open_file->setShortcut(QKeySequence::Open);
  connect(open_file, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open a trace file"), QString(), OpenFileFilter());
    if (!path.isEmpty()) OpenPath(path);
  });
  QAction* open_folder = file->addAction(tr("Open &Folder…"));
  open_folder->setShortcut(QKeySequence("Ctrl+Shift+O"));
  connect(open_folder, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getExistingDirectory(
        this, tr("Open a session folder or a logdir"));
    if (!path.isEmpty()) OpenPath(path);
  });
  QAction* capture = file->addAction(tr("&Capture…"));
  capture->setShortcut(QKeySequence("Ctrl+Shift+C"));
  connect(capture, &QAction::triggered, this, [this] { ShowCaptureDialog(); });
  QAction* compare = file->addAction(tr("Co&mpare…"));
  connect(compare, &QAction::triggered, this, [this] {
    const QString baseline = QFileDialog::getExistingDirectory(
        this, tr("Compare: the baseline session folder"));
    if (baseline.isEmpty()) return;
    const QString candidate = QFileDialog::getExistingDirectory(
        this, tr("Compare: the candidate session folder"), baseline);
    if (!candidate.isEmpty()) ShowCompare(baseline, candidate);
  });
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  session_menu_ = file->addMenu(tr("&Session"));
  session_menu_->setEnabled(false);
  file->addSeparator();
  QAction* save = file->addAction(tr("Save &Image…"));
  save->setShortcut(QKeySequence("Ctrl+Shift+S"));
  connect(save, &QAction::triggered, this, &MainWindow::SaveImage);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"));
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);
  UpdateRecentMenu();
}

void MainWindow::BuildViewMenu() {
  QMenu* view = menuBar()->addMenu(tr("&View"));
  // The zoom and pan keys are the window's, so they work whichever panel
  // has focus; a text field keeps its letters (it overrides shortcuts).
  auto key_action = [this, view](const QString& text, const char* name,
                                 QList<QKeySequence> keys, auto&& on) {
    QAction* a = view->addAction(text);
    a->setObjectName(name);
    a->setShortcuts(keys);
    a->setShortcutContext(Qt::WindowShortcut);
    connect(a, &QAction::triggered, this, on);
    return a;
  };
  key_action(tr("Show &Whole Trace"), "action.fit", {QKeySequence("0")},
             [this] { timeline_->FitAll(); });
  key_action(tr("Zoom &In"), "action.zoomIn",
             {QKeySequence("W"), QKeySequence("+"), QKeySequence("=")},
             [this] { timeline_->ZoomByKey(true); });
  key_action(tr("Zoom &Out"), "action.zoomOut",
             {QKeySequence("S"), QKeySequence("-")},
             [this] { timeline_->ZoomByKey(false); });
  key_action(tr("Pan &Left"), "action.panLeft", {QKeySequence("A")},
             [this] { timeline_->PanByKey(true); });
  key_action(tr("Pan &Right"), "action.panRight", {QKeySequence("D")},
             [this] { timeline_->PanByKey(false); });
  view->addSeparator();
  // What the timeline lists: every rank's main thread and device streams
  // stacked by rank; compact rows; hidden tracks back.
  QAction* side = view->addAction(tr("&Ranks Side by Side"));
  side->setObjectName("action.sideBySide");
  side->setCheckable(true);
  connect(side, &QAction::triggered, timeline_,
          &TimelineWidget::SetRanksSideBySide);
  QAction* compact = view->addAction(tr("Compact &Rows"));
  compact->setObjectName("action.compact");
  compact->setCheckable(true);
  connect(compact, &QAction::triggered, timeline_, &TimelineWidget::SetCompact);
  QAction* show_all = view->addAction(tr("Show &All Tracks"));
  show_all->setObjectName("action.showAllTracks");
  connect(show_all, &QAction::triggered, timeline_,
          &TimelineWidget::ShowAllTracks);
  connect(timeline_, &TimelineWidget::layoutModeChanged, this,
          [this, side, compact, show_all] {
            side->setChecked(timeline_->layout().ranks_side_by_side());
            compact->setChecked(timeline_->layout().compact());
            show_all->setEnabled(timeline_->layout().any_hidden());
          });
  view->addSeparator();
  QAction* collapse = view->addAction(tr("&Collapse All Hosts"));
  connect(collapse, &QAction::triggered, this,
          [this] { timeline_->SetAllCollapsed(true); });
  QAction* expand = view->addAction(tr("&Expand All"));
  connect(expand, &QAction::triggered, this,
          [this] { timeline_->SetAllCollapsed(false); });
  QAction* clear = view->addAction(tr("Clear Range &Selection"));
  connect(clear, &QAction::triggered, this,
          [this] { timeline_->SetRange(std::nullopt); });
  // Live traces: keep the newest time in view (End on the timeline).
  QAction* follow = view->addAction(tr("&Follow Newest Time\tEnd"));
  follow->setObjectName("action.follow");
  follow->setCheckable(true);
  connect(follow, &QAction::triggered, timeline_,
          &TimelineWidget::SetFollowing);
  connect(timeline_, &TimelineWidget::followingChanged, follow,
          &QAction::setChecked);
  AddMeshViewAction(view, this, [this] { return store_; });
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) {
    view->addAction(d->toggleViewAction());
  }
}

void MainWindow::BuildFindAndHelpMenus() {
  QMenu* find = menuBar()->addMenu(tr("F&ind"));
  QAction* find_text = find->addAction(tr("&Find…"));
  find_text->setShortcut(QKeySequence::Find);
  connect(find_text, &QAction::triggered, search_, &SearchBar::FocusField);
  QAction* next = find->addAction(tr("Find &Next"));
  next->setShortcut(QKeySequence::FindNext);
  connect(next, &QAction::triggered, search_, &SearchBar::Next);
  QAction* previous = find->addAction(tr("Find &Previous"));
  previous->setShortcut(QKeySequence::FindPrevious);
  connect(previous, &QAction::triggered, search_, &SearchBar::Previous);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* keys = help->addAction(tr("&Keys and Mouse"));
  keys->setShortcut(QKeySequence::HelpContents);
  connect(keys, &QAction::triggered, this, &MainWindow::ShowKeys);
  QAction* about = help->addAction(tr("&About"));
  connect(about, &QAction::triggered, this, [this] {
    QMessageBox::about(this, tr("About Podscope"),
                       tr("podscope-viewer %1: every host of a capture on "
                          "one timeline.")
                           .arg(QApplication::applicationVersion()));
  });
}

void MainWindow::ShowKeys() {
  QMessageBox::information(
      this, tr("Keys and mouse"),
      tr("<table>"
         "<tr><td><b>Wheel</b>, <b>W</b>/<b>S</b>, <b>+</b>/<b>-</b></td>"
         "<td>zoom in / out around the mouse</td></tr>"
         "<tr><td><b>Drag</b>, <b>A</b>/<b>D</b>, <b>←</b>/<b>→</b></td>"
         "<td>pan</td></tr>"
         "<tr><td><b>Shift+wheel</b></td><td>pan</td></tr>"
         "<tr><td><b>Alt+wheel</b>, wheel over the track names, "
         "<b>↑</b>/<b>↓</b></td><td>scroll tracks</td></tr>"
         "<tr><td><b>Shift+drag</b></td><td>select a time range "
         "(statistics and flame graph follow it)</td></tr>"
         "<tr><td><b>Click</b></td><td>select an event (a click that "
         "brings focus back keeps it)</td></tr>"
         "<tr><td><b>Double-click</b></td><td>zoom to the event</td></tr>"
         "<tr><td><b>F</b></td><td>zoom to the range or the selected "
         "event</td></tr>"
         "<tr><td><b>0</b>, <b>Home</b></td><td>whole trace</td></tr>"
         "<tr><td><b>Esc</b></td><td>clear the range, then the "
         "selection</td></tr>"
         "<tr><td><b>Ctrl+F</b>, <b>/</b></td><td>find; <b>Enter</b>/"
         "<b>F3</b> next, <b>Shift+Enter</b>/<b>Shift+F3</b> "
         "previous</td></tr>"
         "<tr><td>Click a host or process name</td><td>collapse or "
         "expand it</td></tr>"
         "<tr><td>Click <i>counters (N)</i></td><td>list or fold a "
         "process's counters</td></tr>"
         "<tr><td>Click a track name marked <i>+N levels</i></td><td>show "
         "all its levels</td></tr>"
         "<tr><td>Right-click a track</td><td>hide it, show only it, show "
         "all tracks</td></tr>"
         "</table>"));
}

QStringList MainWindow::recent_files() const {
  return Settings().value("recent").toStringList();
}

void MainWindow::AddRecent(const QString& path) {
  QStringList recent = recent_files();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  QSettings settings = Settings();
  settings.setValue("recent", recent);
  UpdateRecentMenu();
}

void MainWindow::UpdateRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = recent_files();
  for (const QString& path : recent) {
    QAction* a = recent_menu_->addAction(path);
    connect(a, &QAction::triggered, this, [this, path] { OpenPath(path); });
  }
  if (!recent.isEmpty()) {
    recent_menu_->addSeparator();
    QAction* clear = recent_menu_->addAction(tr("Clear List"));
    connect(clear, &QAction::triggered, this, [this] {
      QSettings settings = Settings();
      settings.remove("recent");
      UpdateRecentMenu();
    });
  }
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::UpdateSessionMenu() {
  session_menu_->clear();
  if (!store_ || store_->sessions().size() < 2) {
    session_menu_->setEnabled(false);
    return;
  }
  session_menu_->setEnabled(true);
  for (const SessionInfo& s : store_->sessions()) {
    const QString name = QString::fromStdString(s.name);
    QAction* a =
        session_menu_->addAction(tr("%1 (%2 files)").arg(name).arg(s.files));
    a->setCheckable(true);
    a->setChecked(s.path == store_->session().path);
    const QString logdir = path_;
    connect(a, &QAction::triggered, this,
            [this, logdir, name] { OpenPath(logdir, name); });
  }
}

}  // namespace podscope::viewer::app
