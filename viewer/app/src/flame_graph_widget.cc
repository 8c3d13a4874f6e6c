#include "flame_graph_widget.h"

#include <QHelpEvent>
#include <QMetaObject>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <functional>

#include "name_colors.h"
#include "time_format.h"

namespace podscope::viewer::app {
namespace {

QString NameOf(const TraceStore* store, const FlameGraph& g, uint32_t node) {
  if (node == 0) return QStringLiteral("all samples");
  if (store == nullptr) return {};
  const std::string_view s = store->str(g.nodes[node].name);
  if (s.empty()) return QStringLiteral("(unknown frame)");
  return QString::fromUtf8(s.data(), static_cast<int>(s.size()));
}

// The threads with samples in [t0, t1): "host[ rank i] name".
QStringList SampledThreads(const TraceStore& store, int64_t t0, int64_t t1) {
  QStringList out;
  for (const TrackInfo& t : store.tracks()) {
    const std::vector<int64_t>& ts = store.data(t.id).samples.ts;
    auto it = std::lower_bound(ts.begin(), ts.end(), t0);
    if (it == ts.end() || *it >= t1) continue;
    const ProcessInfo& p = store.processes()[t.process];
    QString label = QString::fromStdString(p.host_name);
    if (p.process_index >= 0 && p.process_count > 1) {
      label += QStringLiteral(" rank %1").arg(p.process_index);
    }
    out << QStringLiteral("%1 %2").arg(label, QString::fromStdString(t.name));
  }
  return out;
}

QString Caption(const TraceStore& store, int64_t t0, int64_t t1,
                uint64_t samples, const QStringList& threads) {
  auto d = [](int64_t ns) {
    return QString::fromStdString(FormatDuration(ns));
  };
  const QString range = t0 <= store.first_ns() && t1 > store.last_ns()
                            ? QObject::tr("the whole trace")
                            : QStringLiteral("+%1 – +%2 (%3)")
                                  .arg(d(t0 - store.first_ns()),
                                       d(t1 - store.first_ns()), d(t1 - t0));
  constexpr int kNamed = 3;
  QStringList named = threads.mid(0, kNamed);
  QString on = named.join(QStringLiteral(", "));
  if (threads.size() > kNamed) {
    on += QObject::tr(" and %1 more").arg(threads.size() - kNamed);
  }
  return QObject::tr("%1 samples of %2 on %3")
      .arg(samples)
      .arg(range)
      .arg(threads.size() == 1
               ? QObject::tr("1 thread: %1").arg(on)
               : QObject::tr("%1 threads: %2").arg(threads.size()).arg(on));
}

}  // namespace

FlameGraphWidget::FlameGraphWidget(QWidget* parent) : QWidget(parent) {
  setObjectName("flamegraph");
  setMouseTracking(true);
  setMinimumHeight(120);
}

FlameGraphWidget::~FlameGraphWidget() = default;

void FlameGraphWidget::SetStore(std::shared_ptr<const TraceStore> store) {
  store_ = std::move(store);
  graph_ = FlameGraph();
  caption_.clear();
  depth_.clear();
  focus_ = 0;
  if (store_) SetRange(store_->first_ns(), store_->last_ns() + 1);
  update();
}

void FlameGraphWidget::SetRange(int64_t t0, int64_t t1) {
  if (!store_) return;
  const uint64_t generation = ++generation_;
  std::shared_ptr<const TraceStore> store = store_;
  FlameGraphWidget* self = this;
  runner_.Post([self, store, t0, t1, generation] {
    FlameGraph g = BuildFlameGraph(*store, t0, t1);
    QString caption =
        Caption(*store, t0, t1, g.samples, SampledThreads(*store, t0, t1));
    QMetaObject::invokeMethod(
        self,
        [self, store, generation, g = std::move(g),
         caption = std::move(caption)]() mutable {
          if (generation != self->generation_ || store != self->store_) return;
          self->done_generation_ = generation;
          self->graph_ = std::move(g);
          self->caption_ = std::move(caption);
          self->depth_.assign(self->graph_.nodes.size(), 0);
          // Parents come before their children in node order.
          for (size_t i = 1; i < self->graph_.nodes.size(); ++i) {
            self->depth_[i] = self->depth_[self->graph_.nodes[i].parent] + 1;
          }
          self->focus_ = 0;
          self->update();
          emit self->updated();
        },
        Qt::QueuedConnection);
  });
}

void FlameGraphWidget::Focus(uint32_t node) {
  focus_ = node < graph_.nodes.size() ? node : 0;
  update();
}

std::optional<uint32_t> FlameGraphWidget::NodeAt(const QPoint& pos) const {
  for (const Drawn& d : drawn_) {
    if (d.rect.contains(pos)) return d.node;
  }
  return std::nullopt;
}

void FlameGraphWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  drawn_.clear();
  if (graph_.nodes.empty() || graph_.samples == 0) {
    p.setPen(QColor(0x66, 0x6E, 0x78));
    p.drawText(rect(), Qt::AlignCenter,
               store_ ? tr("No stack samples in this range (record with "
                           "sampling_hz to get them)")
                      : tr("No trace open"));
    return;
  }
  const QFontMetricsF metrics(font());
  const double width = this->width();
  p.setPen(QColor(0x33, 0x3A, 0x44));
  p.drawText(QRectF(3, 0, width - 6, kRowHeight),
             Qt::AlignVCenter | Qt::AlignLeft,
             metrics.elidedText(caption_, Qt::ElideRight, width - 6));
  // The focused node's ancestors as full-width bars, then its subtree.
  std::vector<uint32_t> chain;
  for (uint32_t n = focus_; n != 0; n = graph_.nodes[n].parent) {
    chain.push_back(n);
  }
  chain.push_back(0);
  std::reverse(chain.begin(), chain.end());
  auto draw = [&](uint32_t node, double x, double w, int row, bool dim) {
    const QRectF r(x, row * kRowHeight, std::max(w - 1, 1.0), kRowHeight - 1);
    QColor c = node == 0 ? QColor(0xB8, 0xC0, 0xCC)
                         : QColor::fromRgb(NameColorRgb(
                               store_->str(graph_.nodes[node].name)));
    if (dim) c = c.lighter(125);
    p.fillRect(r, c);
    drawn_.push_back({node, r});
    if (w >= 30) {
      const FlameNode& n = graph_.nodes[node];
      const double share = 100.0 * n.total / graph_.samples;
      const QString text = QStringLiteral("%1 (%2%)")
                               .arg(NameOf(store_.get(), graph_, node))
                               .arg(share, 0, 'f', share < 10 ? 1 : 0);
      p.setPen(Qt::black);
      p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 metrics.elidedText(text, Qt::ElideRight, w - 6));
    }
  };
  int row = 1;  // below the caption
  for (size_t i = 0; i + 1 < chain.size(); ++i)
    draw(chain[i], 0, width, row++, true);
  std::function<void(uint32_t, double, double, int)> subtree =
      [&](uint32_t node, double x, double w, int r) {
        if (r * kRowHeight > height()) return;
        draw(node, x, w, r, false);
        const FlameNode& n = graph_.nodes[node];
        double cx = x;
        for (uint32_t c : n.children) {
          const double cw =
              n.total == 0 ? 0 : w * graph_.nodes[c].total / n.total;
          if (cw >= 0.5) subtree(c, cx, cw, r + 1);
          cx += cw;
        }
      };
  subtree(focus_, 0, width, row);
}

void FlameGraphWidget::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  if (auto node = NodeAt(event->pos()))
    Focus(*node == focus_ ? graph_.nodes[*node].parent : *node);
}

bool FlameGraphWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (auto node = NodeAt(help->pos())) {
      const FlameNode& n = graph_.nodes[*node];
      QToolTip::showText(
          help->globalPos(),
          tr("<b>%1</b><br>%2 samples (%3% of %4), %5 as the leaf")
              .arg(NameOf(store_.get(), graph_, *node).toHtmlEscaped())
              .arg(n.total)
              .arg(100.0 * n.total / std::max<uint64_t>(graph_.samples, 1), 0,
                   'f', 1)
              .arg(graph_.samples)
              .arg(n.self),
          this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace podscope::viewer::app
