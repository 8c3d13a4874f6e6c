// The Query panel (bottom tab): SQL over the open session with the same
// tables as `podscope query` (viewer/core session_query.h). A statement
// runs in the background; its rows are listed (the first 10,000), and a
// row with an `id` or `slice_id` column shows that slice on the timeline
// when clicked.
#ifndef PODSCOPE_VIEWER_APP_QUERY_PANEL_H_
#define PODSCOPE_VIEWER_APP_QUERY_PANEL_H_

#include <QWidget>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "podscope/viewer/session_query.h"
#include "podscope/viewer/trace_store.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace podscope::viewer::app {

class QueryPanel : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kMaxRows = 10000;

  explicit QueryPanel(QWidget* parent = nullptr);
  ~QueryPanel() override;

  void SetStore(std::shared_ptr<const TraceStore> store);
  // Runs `sql` (as the Run button does) in the background.
  void Run(const QString& sql);
  bool busy() const { return busy_.load(); }
  // Shows row `row`'s slice, as a click does.
  void ActivateRow(int row);

  QLineEdit* editor() const { return editor_; }
  QTableWidget* table() const { return table_; }
  QLabel* status() const { return status_; }

 signals:
  void eventRequested(podscope::viewer::EventRef event);
  void finished();

 private:
  struct Result {
    std::vector<std::string> columns;
    std::vector<std::vector<QueryValue>> rows;
    bool truncated = false;
    QString error;
    double seconds = 0;
  };
  void Show(std::shared_ptr<Result> result);
  void Join();

  std::shared_ptr<const TraceStore> store_;
  QLineEdit* editor_;
  QPushButton* run_;
  QLabel* status_;
  QTableWidget* table_;
  int id_column_ = -1;
  std::vector<int64_t> ids_;  // per shown row, -1 without one
  std::atomic<bool> busy_{false};
  std::thread worker_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_QUERY_PANEL_H_
