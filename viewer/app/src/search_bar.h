// Find events by name (substring or regex, via viewer/core's Search) and
// step through the hits in time order; each hit is selected and shown on
// the timeline.
#ifndef PODSCOPE_VIEWER_APP_SEARCH_BAR_H_
#define PODSCOPE_VIEWER_APP_SEARCH_BAR_H_

#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "podscope/viewer/analysis.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QToolButton;

namespace podscope::viewer::app {

class TimelineWidget;

class SearchBar : public QWidget {
  Q_OBJECT

 public:
  // Hits beyond this many are reached by stepping, not counted.
  static constexpr size_t kCountLimit = 10000;

  explicit SearchBar(TimelineWidget* timeline, QWidget* parent = nullptr);

  void SetStore(std::shared_ptr<const TraceStore> store);

  QLineEdit* line_edit() const { return edit_; }
  QCheckBox* regex_box() const { return regex_; }
  QCheckBox* case_box() const { return case_; }
  QString status_text() const;
  // The hit shown now.
  std::optional<SearchHit> current() const { return current_; }

 public slots:
  void Next();
  void Previous();
  void FocusField();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void QueryChanged();
  bool Prepare();  // (re)counts hits when the query changed
  void Show(const SearchHit& hit, bool wrapped);
  void SetStatus(const QString& text, bool error = false);
  std::optional<SearchHit> LastHit();

  TimelineWidget* timeline_;
  std::shared_ptr<const TraceStore> store_;
  QLineEdit* edit_;
  QCheckBox* regex_;
  QCheckBox* case_;
  QToolButton* prev_;
  QToolButton* next_;
  QLabel* status_;
  bool dirty_ = true;
  SearchQuery query_;
  std::vector<SearchHit> counted_;  // the first kCountLimit hits
  std::optional<SearchHit> current_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_SEARCH_BAR_H_
