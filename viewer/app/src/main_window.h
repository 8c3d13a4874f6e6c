// The viewer's main window: the timeline in the middle with the search bar
// and a banner for load problems above it, the details, statistics, flame
// graph and step panels docked around it, loading in the background with a
// progress bar and cancel.
#ifndef PODSCOPE_VIEWER_APP_MAIN_WINDOW_H_
#define PODSCOPE_VIEWER_APP_MAIN_WINDOW_H_

#include <QMainWindow>
#include <QString>
#include <QStringList>
#include <memory>

#include "podscope/viewer/doctor_dump.h"
#include "podscope/viewer/trace_store.h"

class QAction;
class QFrame;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QSettings;

namespace podscope::viewer::app {

class CaptureDialog;
class CompareWindow;
class QueryPanel;
class DetailsPanel;
class FlameGraphWidget;
class LiveSession;
class PodPanel;
class SearchBar;
class StatsPanel;
class StepsPanel;
class TimelineWidget;
class TraceLoader;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  static constexpr int kMaxRecent = 10;
  // File › Open's name filters: the trace files it opens (podtrace, XSpace,
  // Chrome JSON and Kineto traces, plain or gzipped), then all files.
  static QString OpenFileFilter();

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Starts loading a file, session folder or logdir in the background;
  // loaded() follows.
  void OpenPath(const QString& path, const QString& session = {});
  bool loading() const;
  // Shows the trace files being written into `path` (a session folder, or
  // one file) as they grow: read every 250 ms, new files added as they
  // appear, the timeline following the newest time (main_window_live.cc).
  // Statistics, flame graph and steps are computed once every file is
  // closed or following ends. Opening another trace stops following.
  void FollowPath(const QString& path);
  // Reads once more and stops following (the store stays shown).
  void StopFollowing();
  LiveSession* live() const { return live_; }
  // Spins the event loop until nothing is loading or computing (statistics,
  // flame graph) or `timeout_ms` passed; false on timeout.
  bool WaitUntilIdle(int timeout_ms);

  std::shared_ptr<const TraceStore> store() const { return store_; }
  QString load_error() const { return load_error_; }
  QString banner_text() const;
  bool banner_shown() const;
  // The job doctor's verdict and marks of a dump folder opened (null for
  // other traces); ShowDoctorVerdict zooms the timeline to its marks, as
  // clicking the verdict in the banner does.
  const DoctorView* doctor() const { return doctor_.get(); }
  void ShowDoctorVerdict();
  QStringList recent_files() const;
  // Puts the window and its panels where the user left them last time
  // (the interactive viewer calls it; screenshots keep the default layout).
  void RestoreWindowState();

  TimelineWidget* timeline() const { return timeline_; }
  DetailsPanel* details() const { return details_; }
  SearchBar* search() const { return search_; }
  StatsPanel* stats() const { return stats_; }
  FlameGraphWidget* flame_graph() const { return flame_; }
  StepsPanel* steps() const { return steps_; }
  PodPanel* pod() const { return pod_; }
  QueryPanel* query() const { return query_; }
  // Loads the events of processes of a store opened as an overview (what
  // expanding a host row does); waits for the panels' background work
  // first, since the store grows in place.
  void LoadDetail(const std::vector<ProcessId>& processes);
  // File › Capture…: shows the capture dialog (made on first use); a
  // capture that writes files opens its session folder here.
  CaptureDialog* ShowCaptureDialog();
  // File › Compare…: a window comparing two sessions (compare_window.h),
  // deleted when closed.
  CompareWindow* ShowCompare(const QString& baseline, const QString& candidate);

 signals:
  void loaded(bool ok);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  // Where the recent files and the window's layout are kept.
  static QSettings Settings();
  // The timeline with the search bar and the (hidden) banner above it.
  void BuildCentral();
  void BuildBanner();
  void BuildDocks();
  // The status text, the loading progress bar and its cancel button.
  void BuildStatusBar();
  // Loading progress and results, and the panels' requests to the timeline
  // and its selection to them.
  void ConnectPanels();
  void BuildMenus();
  void BuildFileMenu();
  void BuildViewMenu();
  void BuildFindAndHelpMenus();
  void UpdateRecentMenu();
  void UpdateSessionMenu();
  void AddRecent(const QString& path);
  void OnOverviewsRefined();
  void OnLoadFinished();
  // `live`: the store grows in place; the panels that compute in the
  // background get it only when OnLiveEnded or every file is closed.
  void SetStore(std::shared_ptr<const TraceStore> store, const QString& path,
                bool live = false,
                std::shared_ptr<const DoctorView> doctor = nullptr);
  // The banner's lines about a job doctor's dump: its verdict (a link to
  // its marks) and the journals that could not be used.
  QStringList DoctorBannerLines(bool* failed) const;
  void UpdateBanner();
  void OnLiveGrew();
  void OnLiveEnded();
  void GiveStoreToBackgroundPanels();
  void ShowBanner(const QString& html, bool error);
  void UpdateRangeConsumers();
  void ShowKeys();
  void SaveImage();

  std::shared_ptr<const TraceStore> store_;
  std::shared_ptr<const DoctorView> doctor_;
  // store_ when it was opened from files (not live): LoadDetail grows it.
  std::shared_ptr<TraceStore> loaded_store_;
  QString path_;
  QString load_error_;
  TraceLoader* loader_;
  TimelineWidget* timeline_;
  DetailsPanel* details_;
  SearchBar* search_;
  StatsPanel* stats_;
  FlameGraphWidget* flame_;
  StepsPanel* steps_;
  QueryPanel* query_ = nullptr;
  PodPanel* pod_;
  QFrame* banner_;
  QLabel* banner_text_;
  QLabel* status_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QMenu* recent_menu_ = nullptr;
  QMenu* session_menu_ = nullptr;
  CaptureDialog* capture_dialog_ = nullptr;
  LiveSession* live_ = nullptr;
  // The statistics, flame graph and steps panels hold the live store.
  bool background_panels_live_ = false;
  bool restore_state_on_close_ = false;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_MAIN_WINDOW_H_
