// Per-host step times (viewer/core StepTable): how many steps each host
// ran and how long they took, so a straggler stands out. Activating a row
// selects that host's slowest step on the timeline.
#ifndef PODSCOPE_VIEWER_APP_STEPS_PANEL_H_
#define PODSCOPE_VIEWER_APP_STEPS_PANEL_H_

#include <QWidget>
#include <memory>
#include <vector>

#include "latest_job_runner.h"
#include "podscope/viewer/analysis.h"

class QLabel;
class QTableWidget;

namespace podscope::viewer::app {

class StepsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit StepsPanel(QWidget* parent = nullptr);
  ~StepsPanel() override;
  // Computes the table in the background (a scan of every slice's name).
  void SetStore(std::shared_ptr<const TraceStore> store);
  // Returns once no background computation reads the store.
  void WaitIdle() { runner_.Drain(); }
  QTableWidget* table() const { return table_; }
  bool busy() const { return done_generation_ != generation_; }

 signals:
  void stepRequested(podscope::viewer::EventRef step);

 private:
  void Show(std::vector<HostSteps> steps);

  std::shared_ptr<const TraceStore> store_;
  std::vector<HostSteps> steps_;
  QLabel* note_;
  QTableWidget* table_;
  uint64_t generation_ = 0;
  uint64_t done_generation_ = 0;
  LatestJobRunner runner_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_STEPS_PANEL_H_
