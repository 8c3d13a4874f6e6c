// Per-rank step times, with the steps of `podscope analyze`'s step table
// (viewer/core AnalyzeSteps, the one definition of a step): how many steps
// each rank ran and how long their windows took, so a straggler stands
// out. Activating a row shows that rank's slowest step on the timeline.
// The same windows are what the timeline draws as "step N" bands.
#ifndef PODSCOPE_VIEWER_APP_STEPS_PANEL_H_
#define PODSCOPE_VIEWER_APP_STEPS_PANEL_H_

#include <QWidget>
#include <memory>
#include <vector>

#include "latest_job_runner.h"
#include "podscope/viewer/pod_analysis.h"
#include "render_context.h"

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
  // Every rank's step windows (empty until computed).
  const std::vector<StepBand>& bands() const { return bands_; }

 signals:
  // A step's slice and its window [start, end) on the store's clock.
  void stepRequested(podscope::viewer::EventRef step, qint64 start, qint64 end);
  // bands() changed.
  void stepsChanged();

 private:
  void Show(StepBreakdown steps);

  std::shared_ptr<const TraceStore> store_;
  StepBreakdown steps_;
  std::vector<StepBand> bands_;
  QLabel* note_;
  QTableWidget* table_;
  uint64_t generation_ = 0;
  uint64_t done_generation_ = 0;
  LatestJobRunner runner_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_STEPS_PANEL_H_
