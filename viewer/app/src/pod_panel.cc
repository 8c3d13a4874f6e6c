#include "pod_panel.h"

#include <QColor>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMetaObject>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "time_format.h"

namespace podscope::viewer::app {
namespace {

QString D(int64_t ns) { return QString::fromStdString(FormatDuration(ns)); }

// White at the row's median or faster, red at twice it or slower.
QColor Shade(int64_t ns, int64_t median) {
  if (median <= 0) return QColor(Qt::white);
  const double over = std::clamp(
      static_cast<double>(ns - median) / static_cast<double>(median), 0.0, 1.0);
  return QColor::fromRgbF(1.0, 1.0 - 0.65 * over, 1.0 - 0.65 * over);
}

}  // namespace

PodPanel::PodPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("pod");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  note_ = new QLabel;
  note_->setWordWrap(true);
  layout->addWidget(note_);
  verdict_ = new QLabel;
  verdict_->setObjectName("pod.verdict");
  verdict_->setWordWrap(true);
  verdict_->setTextFormat(Qt::RichText);
  layout->addWidget(verdict_);
  connect(verdict_, &QLabel::linkActivated, this, [this](const QString&) {
    if (model_.evidence) emit eventRequested(*model_.evidence);
  });
  auto* split = new QSplitter(Qt::Horizontal);
  table_ = new QTableWidget(0, 0);
  table_->setObjectName("pod.table");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  connect(table_, &QTableWidget::cellClicked, this, &PodPanel::ActivateCell);
  split->addWidget(table_);
  auto* side = new QWidget;
  auto* side_layout = new QVBoxLayout(side);
  side_layout->setContentsMargins(0, 0, 0, 0);
  side_layout->addWidget(new QLabel(tr("Compilations")));
  compiles_ = new QListWidget;
  compiles_->setObjectName("pod.compiles");
  side_layout->addWidget(compiles_);
  side_layout->addWidget(new QLabel(tr("Peers of the selected collective")));
  peers_list_ = new QListWidget;
  peers_list_->setObjectName("pod.peers");
  side_layout->addWidget(peers_list_);
  split->addWidget(side);
  layout->addWidget(split, 1);
  connect(compiles_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) {
            const int i = compiles_->row(item);
            if (i >= 0 && static_cast<size_t>(i) < model_.compiles.size()) {
              emit eventRequested(model_.compiles[i].event);
            }
          });
  connect(peers_list_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) {
            const int i = peers_list_->row(item);
            if (i >= 0 && static_cast<size_t>(i) < peers_.size()) {
              emit eventRequested(peers_[i]);
            }
          });
}

PodPanel::~PodPanel() = default;

void PodPanel::SetStore(std::shared_ptr<const TraceStore> store) {
  store_ = std::move(store);
  const uint64_t generation = ++generation_;
  Show({});
  peers_.clear();
  peers_list_->clear();
  if (!store_) {
    done_generation_ = generation;
    return;
  }
  note_->setText(tr("Comparing the ranks' steps…"));
  std::shared_ptr<const TraceStore> s = store_;
  PodPanel* self = this;
  runner_.Post([self, s, generation] {
    PodModel model = BuildPodModel(*s);
    QMetaObject::invokeMethod(
        self,
        [self, generation, model = std::move(model)]() mutable {
          if (generation != self->generation_) return;
          self->done_generation_ = generation;
          self->Show(std::move(model));
        },
        Qt::QueuedConnection);
  });
}

void PodPanel::Show(PodModel model) {
  model_ = std::move(model);
  table_->clear();
  table_->setColumnCount(static_cast<int>(model_.ranks.size()));
  table_->setRowCount(static_cast<int>(model_.rows));
  QStringList columns;
  for (const PodRank& r : model_.ranks) {
    columns << QString::fromStdString(r.label);
  }
  table_->setHorizontalHeaderLabels(columns);
  QStringList rows;
  for (size_t k = 0; k < model_.rows; ++k) {
    rows << tr("step %1").arg(model_.row_step[k]);
  }
  table_->setVerticalHeaderLabels(rows);
  for (size_t c = 0; c < model_.ranks.size(); ++c) {
    const PodRank& r = model_.ranks[c];
    for (size_t k = 0; k < r.steps.size(); ++k) {
      if (!r.steps[k].present) continue;
      auto* item = new QTableWidgetItem(D(r.steps[k].duration_ns));
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      item->setBackground(
          Shade(r.steps[k].duration_ns, model_.row_median_ns[k]));
      item->setForeground(QColor(Qt::black));
      item->setToolTip(tr("%1, step %2: %3 (row median %4)")
                           .arg(QString::fromStdString(r.label))
                           .arg(model_.row_step[k])
                           .arg(D(r.steps[k].duration_ns))
                           .arg(D(model_.row_median_ns[k])));
      table_->setItem(static_cast<int>(k), static_cast<int>(c), item);
    }
  }
  if (model_.straggler) {
    verdict_->setText(
        QString("<b>%1</b> <a href=\"evidence\">show its slowest step</a>")
            .arg(QString::fromStdString(model_.verdict).toHtmlEscaped()));
  } else {
    verdict_->setText(QString::fromStdString(model_.verdict).toHtmlEscaped());
  }
  compiles_->clear();
  for (const PodModel::Compile& c : model_.compiles) {
    compiles_->addItem(QString::fromStdString(c.text));
  }
  if (!store_) {
    note_->clear();
  } else if (model_.ranks.empty() || model_.rows == 0) {
    note_->setText(
        tr("No step markers: slices whose name contains \"step\" "
           "are compared across ranks."));
  } else {
    note_->setText(
        tr("Step times per rank; a cell is redder the slower it "
           "is than its row's median. Click a cell to show that "
           "step."));
  }
}

void PodPanel::ActivateCell(int row, int column) {
  if (column < 0 || static_cast<size_t>(column) >= model_.ranks.size()) return;
  const PodRank& r = model_.ranks[column];
  if (row < 0 || static_cast<size_t>(row) >= r.steps.size() ||
      !r.steps[row].present) {
    return;
  }
  emit eventRequested(r.steps[row].event);
}

void PodPanel::ShowSelection(std::optional<EventRef> event) {
  std::vector<EventRef> peers;
  if (store_ && event) peers = CollectivePeers(*store_, *event);
  if (peers.size() < 2) peers.clear();  // alone: no peers to show
  if (peers == peers_) return;
  peers_ = std::move(peers);
  peers_list_->clear();
  for (const EventRef& e : peers_) {
    const ProcessInfo& p =
        store_->processes()[store_->tracks()[e.track].process];
    peers_list_->addItem(tr("%1 · %2 · %3")
                             .arg(p.process_index >= 0
                                      ? tr("rank %1").arg(p.process_index)
                                      : QString::fromStdString(p.host_name))
                             .arg(QString::fromStdString(
                                 std::string(store_->str(store_->NameOf(e)))))
                             .arg(D(store_->DurationOf(e))));
  }
  emit peersChanged(peers_);
}

}  // namespace podscope::viewer::app
