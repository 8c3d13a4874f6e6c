// The stack samples of the selected range (viewer/core BuildFlameGraph) as
// an icicle graph: callers above callees, widths proportional to samples.
// Click a frame to zoom into it, the top bar to zoom out. A caption above
// says what it covers: the sample count, the time range and the threads
// sampled.
#ifndef PODSCOPE_VIEWER_APP_FLAME_GRAPH_WIDGET_H_
#define PODSCOPE_VIEWER_APP_FLAME_GRAPH_WIDGET_H_

#include <QRectF>
#include <QString>
#include <QWidget>
#include <memory>
#include <vector>

#include "latest_job_runner.h"
#include "podscope/viewer/analysis.h"

namespace podscope::viewer::app {

class FlameGraphWidget : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRowHeight = 18;

  explicit FlameGraphWidget(QWidget* parent = nullptr);
  ~FlameGraphWidget() override;

  void SetStore(std::shared_ptr<const TraceStore> store);
  // Returns once no background computation reads the store.
  void WaitIdle() { runner_.Drain(); }
  void SetRange(int64_t t0, int64_t t1);

  const FlameGraph& graph() const { return graph_; }
  // "1200 samples of +0 ns – +1.50 s (1.50 s) on 4 threads: hostA main,
  // hostB main, hostC main and 1 more" ("of the whole trace" when the range
  // covers it).
  const QString& caption() const { return caption_; }
  bool busy() const { return done_generation_ != generation_; }
  // Zooms into a node (0: the root).
  void Focus(uint32_t node);
  uint32_t focus() const { return focus_; }
  // The node drawn at a widget point, if any.
  std::optional<uint32_t> NodeAt(const QPoint& pos) const;

  QSize sizeHint() const override { return QSize(600, 240); }

 signals:
  void updated();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  std::shared_ptr<const TraceStore> store_;
  FlameGraph graph_;
  QString caption_;
  std::vector<uint32_t> depth_;  // per node
  uint32_t focus_ = 0;
  struct Drawn {
    uint32_t node;
    QRectF rect;
  };
  std::vector<Drawn> drawn_;
  uint64_t generation_ = 0;
  uint64_t done_generation_ = 0;
  LatestJobRunner runner_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_FLAME_GRAPH_WIDGET_H_
