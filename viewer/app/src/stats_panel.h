// Statistics of the selected range (viewer/core RangeStats: count, total,
// self, min / mean / max per name, optionally per host and rank) in a
// sortable
// table. Computed off the GUI thread; the newest request wins.
#ifndef PODSCOPE_VIEWER_APP_STATS_PANEL_H_
#define PODSCOPE_VIEWER_APP_STATS_PANEL_H_

#include <QAbstractTableModel>
#include <QWidget>
#include <memory>
#include <vector>

#include "latest_job_runner.h"
#include "podscope/viewer/analysis.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace podscope::viewer::app {

class StatsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    kName,
    kHost,
    kCount,
    kTotal,
    kSelf,
    kMin,
    kMean,
    kMax,
    kColumns
  };
  // The raw number behind a cell (ns or count), the sort key.
  static constexpr int kSortRole = Qt::UserRole + 1;

  explicit StatsModel(QObject* parent = nullptr);
  void SetRows(std::shared_ptr<const TraceStore> store,
               std::vector<NameStats> rows);
  const std::vector<NameStats>& stats() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role) const override;

 private:
  std::shared_ptr<const TraceStore> store_;
  std::vector<NameStats> rows_;
};

class StatsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit StatsPanel(QWidget* parent = nullptr);
  ~StatsPanel() override;

  void SetStore(std::shared_ptr<const TraceStore> store);
  // Returns once no background computation reads the store.
  void WaitIdle() { runner_.Drain(); }
  // Statistics of [t0, t1) (the whole trace when no range is given).
  void SetRange(int64_t t0, int64_t t1, bool whole_trace);

  StatsModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QCheckBox* by_host_box() const { return by_host_; }
  bool busy() const { return done_generation_ != generation_; }
  QString summary_text() const;
  // The range of the rows shown.
  int64_t t0() const { return t0_; }
  int64_t t1() const { return t1_; }

 signals:
  void updated();

 private:
  void Recompute();

  std::shared_ptr<const TraceStore> store_;
  StatsModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* view_;
  QCheckBox* by_host_;
  QLineEdit* filter_;
  QLabel* summary_;
  int64_t t0_ = 0;
  int64_t t1_ = 0;
  bool whole_ = true;
  uint64_t generation_ = 0;
  uint64_t done_generation_ = 0;
  // Last: joined first on destruction, while the panel is still whole.
  LatestJobRunner runner_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_STATS_PANEL_H_
