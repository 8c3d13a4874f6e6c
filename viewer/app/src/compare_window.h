// File › Compare…: two sessions side by side. The baseline's timeline
// above the candidate's, and beside them the diff (viewer/core
// session_diff.h, what `podscope diff` prints): the verdict on step time
// and a row per figure. A click on a row shows the same place in both
// timelines: for step time and categories the step nearest the median,
// for a rank that rank's, and for an op, scope or collective its longest
// occurrence in that step on the rank that moved most. Both sessions are
// loaded and compared in the background.
#ifndef PODSCOPE_VIEWER_APP_COMPARE_WINDOW_H_
#define PODSCOPE_VIEWER_APP_COMPARE_WINDOW_H_

#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/session_diff.h"
#include "podscope/viewer/trace_store.h"

class QLabel;
class QTableWidget;

namespace podscope::viewer::app {

class TimelineWidget;

class CompareWindow : public QWidget {
  Q_OBJECT

 public:
  explicit CompareWindow(QWidget* parent = nullptr);
  ~CompareWindow() override;

  // Loads both sessions (paths as File › Open takes them) and compares
  // them; loaded() is emitted when the diff is shown or failed.
  void Open(const QString& baseline, const QString& candidate);
  bool busy() const { return busy_.load(); }
  // Runs the event loop until idle; false on timeout.
  bool WaitUntilIdle(int timeout_ms);

  QLabel* verdict() const { return verdict_; }
  QTableWidget* table() const { return table_; }
  TimelineWidget* baseline_timeline() const { return timelines_[0]; }
  TimelineWidget* candidate_timeline() const { return timelines_[1]; }
  const SessionDiff& diff() const { return result_->diff; }
  // Shows row `row` of the table in both timelines, as a click does.
  void ActivateRow(int row);

 signals:
  void loaded();

 private:
  struct Result {
    std::shared_ptr<const TraceStore> store[2];
    StepBreakdown steps[2];
    SessionDiff diff;
    QString error;
  };
  // What a row links to.
  struct Link {
    enum class Kind { kNone, kJobStep, kRankStep, kName } kind = Kind::kNone;
    int rank = -1;      // kRankStep, kName
    std::string name;   // kName: the slice name
    double value[2]{};  // the figure's value in each session (kJobStep,
                        // kRankStep: the step nearest it is shown)
  };

  void Show(std::shared_ptr<Result> result);
  void AddRow(const std::vector<QString>& cells, bool significant, Link link);
  void ShowIn(int session, const Link& link);

  TimelineWidget* timelines_[2];
  QLabel* titles_[2];
  QLabel* verdict_;
  QTableWidget* table_;
  std::vector<Link> links_;
  std::shared_ptr<Result> result_;
  std::atomic<bool> busy_{false};
  std::thread worker_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_COMPARE_WINDOW_H_
