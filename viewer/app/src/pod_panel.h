// The Pod panel: how the ranks of a job compare. A steps × ranks heat
// table (a cell's shade is the step's time against the median of its row;
// click a cell to show that rank's step on the timeline), the straggler
// verdict with a link to the step that shows it, the compilations with
// links, and, when a collective is selected on the timeline, its peers on
// every rank (the slices with the same `collective_id`). Beside the step
// table, tabs hold the other analyses (pod_views.h): where step time went,
// top work, the op profile against the roofline and device memory; a click
// on a row shows its place on the timeline. Computed in the background
// from pod_model.h.
#ifndef PODSCOPE_VIEWER_APP_POD_PANEL_H_
#define PODSCOPE_VIEWER_APP_POD_PANEL_H_

#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "latest_job_runner.h"
#include "pod_model.h"

class QLabel;
class QListWidget;
class QTableWidget;
class QTabWidget;

namespace podscope::viewer::app {

class JobDoctorView;

class PodPanel : public QWidget {
  Q_OBJECT

 public:
  explicit PodPanel(QWidget* parent = nullptr);
  ~PodPanel() override;

  void SetStore(std::shared_ptr<const TraceStore> store);
  // Returns once no background computation reads the store.
  void WaitIdle() { runner_.Drain(); }
  // The timeline's selection: a collective's peers are listed.
  void ShowSelection(std::optional<EventRef> event);
  bool busy() const { return done_generation_ != generation_; }

  const PodModel& model() const { return model_; }
  QTableWidget* table() const { return table_; }
  QLabel* verdict() const { return verdict_; }
  QListWidget* compiles() const { return compiles_; }
  QListWidget* peers_list() const { return peers_list_; }
  // The critical path of the step last shown from the table: a sentence,
  // and its events (outlined on the timeline).
  QLabel* path_label() const { return path_; }
  const std::vector<EventRef>& path() const { return path_events_; }
  const std::vector<EventRef>& peers() const { return peers_; }
  // Activates cell (step row, rank column), as a click does.
  void ActivateCell(int row, int column);
  // The analysis tabs: the step table's tab first, then one per view.
  QTabWidget* tabs() const { return tabs_; }
  // The table of view `i` (model().views[i]); nullptr when out of range.
  QTableWidget* view_table(size_t i) const {
    return i < view_tables_.size() ? view_tables_[i] : nullptr;
  }
  // Activates row `row` of view `view`, as a click does.
  void ActivateViewRow(size_t view, int row);
  // The "Job health" tab: a live job's state while a capture of it runs
  // (job_doctor_view.h); it stays whatever store is shown.
  JobDoctorView* job_doctor() const { return job_doctor_; }

 signals:
  // Show this event: select it and zoom the timeline to it.
  void eventRequested(podscope::viewer::EventRef event);
  // The peers of the selected collective changed (empty: none).
  void peersChanged(const std::vector<podscope::viewer::EventRef>& peers);
  // Show this time range on the timeline.
  void timesRequested(int64_t t0, int64_t t1);

 private:
  void Show(PodModel model);
  void ShowCriticalPath(int row);

  std::shared_ptr<const TraceStore> store_;
  PodModel model_;
  std::vector<EventRef> peers_;
  QLabel* note_;
  QTableWidget* table_;
  QLabel* verdict_;
  QLabel* path_;
  std::vector<EventRef> path_events_;
  QListWidget* compiles_;
  QListWidget* peers_list_;
  QTabWidget* tabs_;
  std::vector<QTableWidget*> view_tables_;
  std::vector<QLabel*> view_notes_;
  JobDoctorView* job_doctor_;
  uint64_t generation_ = 0;
  uint64_t done_generation_ = 0;
  LatestJobRunner runner_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_POD_PANEL_H_
