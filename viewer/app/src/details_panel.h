// The selected event: name, times, track, user scope, arguments, the
// flows to follow and, for a collective, its peers on every rank.
#ifndef PODSCOPE_VIEWER_APP_DETAILS_PANEL_H_
#define PODSCOPE_VIEWER_APP_DETAILS_PANEL_H_

#include <QMap>
#include <QString>
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "podscope/viewer/trace_store.h"

class QLabel;
class QListWidget;
class QTableWidget;

namespace podscope::viewer::app {

// `text` with zero-width spaces (U+200B) where a line may break: after
// path separators (› / . _ - : ,) and inside any run of more than
// `max_run` characters without one, so that a long track path or name
// wraps in a narrow panel instead of being cut. Removing the U+200B gives
// `text` back.
QString BreakableText(const QString& text, int max_run = 16);

class DetailsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit DetailsPanel(QWidget* parent = nullptr);

  void SetStore(std::shared_ptr<const TraceStore> store);
  void ShowEvent(std::optional<EventRef> event);

  // The text of a field ("name", "start", "duration", "self", "track",
  // "scope", "enclosing"), as shown (without the break opportunities).
  QString field(const QString& key) const;
  QTableWidget* args_table() const { return args_; }
  QListWidget* flows_list() const { return flows_; }
  // A collective's peers (pod_model.h CollectivePeers), a row per rank by
  // rank: "rank i" (marked when it arrived last), how much after the first
  // arrival it arrived, how long it waited. Hidden for other events.
  QTableWidget* peers_table() const { return peers_; }
  // The event the flow at `row` of the flows list leads to.
  std::optional<EventRef> flow_target(int row) const;

 signals:
  // The user clicked a flow: select and show its other end.
  void followRequested(podscope::viewer::EventRef event);

 private:
  void ShowArgs(const EventRef& e);
  void ShowPeers(const EventRef& e);

  std::shared_ptr<const TraceStore> store_;
  QMap<QString, QLabel*> fields_;
  QLabel* placeholder_ = nullptr;
  QWidget* body_ = nullptr;
  QTableWidget* args_ = nullptr;
  QListWidget* flows_ = nullptr;
  QLabel* flows_label_ = nullptr;
  QLabel* args_label_ = nullptr;
  QTableWidget* peers_ = nullptr;
  QLabel* peers_label_ = nullptr;
  std::vector<EventRef> peer_targets_;
  std::vector<EventRef> flow_targets_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_DETAILS_PANEL_H_
