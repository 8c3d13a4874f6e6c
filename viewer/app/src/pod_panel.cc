#include "pod_panel.h"

#include <QColor>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMetaObject>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "job_doctor_view.h"
#include "podscope/base/numeric.h"
#include "podscope/viewer/critical_path.h"
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
  // The worst wait: its last arrival selected (its peers outlined), the
  // whole collective on every rank in view.
  connect(verdict_, &QLabel::linkActivated, this, [this](const QString&) {
    if (!model_.evidence) return;
    emit eventRequested(*model_.evidence);
    emit timesRequested(model_.evidence_start_ns, model_.evidence_end_ns);
  });
  path_ = new QLabel;
  path_->setObjectName("pod.path");
  path_->setWordWrap(true);
  path_->hide();  // shown with a step's path: no room taken before
  layout->addWidget(path_);
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
  tabs_ = new QTabWidget;
  tabs_->setObjectName("pod.tabs");
  tabs_->addTab(split, tr("Steps"));
  // One tab per analysis view; their titles and columns come with the
  // model.
  for (const char* title : {"Time", "Top work", "Op profile", "Memory"}) {
    auto* page = new QWidget;
    auto* page_layout = new QVBoxLayout(page);
    page_layout->setContentsMargins(0, 0, 0, 0);
    auto* note = new QLabel;
    note->setWordWrap(true);
    page_layout->addWidget(note);
    auto* table = new QTableWidget(0, 0);
    table->setObjectName(QString("pod.view.%1").arg(view_tables_.size()));
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setSelectionMode(QAbstractItemView::SingleSelection);
    table->verticalHeader()->setVisible(false);
    const size_t index = view_tables_.size();
    connect(table, &QTableWidget::cellClicked, this,
            [this, index](int row, int) { ActivateViewRow(index, row); });
    page_layout->addWidget(table, 1);
    tabs_->addTab(page, tr(title));
    view_tables_.push_back(table);
    view_notes_.push_back(note);
  }
  job_doctor_ = new JobDoctorView;
  tabs_->addTab(job_doctor_, tr("Job health"));
  layout->addWidget(tabs_, 1);
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
  QString verdict = QString::fromStdString(model_.verdict).toHtmlEscaped();
  if (model_.straggler) verdict = QString("<b>%1</b>").arg(verdict);
  if (model_.evidence) {
    verdict += QString(" <a href=\"evidence\">%1</a>").arg(tr("show"));
  }
  verdict_->setText(verdict);
  for (size_t i = 0; i < view_tables_.size(); ++i) {
    QTableWidget* table = view_tables_[i];
    table->clear();
    table->setRowCount(0);
    table->setColumnCount(0);
    view_notes_[i]->clear();
    if (i >= model_.views.size()) continue;
    const PodView& v = model_.views[i];
    tabs_->setTabText(static_cast<int>(i) + 1, QString::fromStdString(v.title));
    view_notes_[i]->setText(QString::fromStdString(v.note));
    QStringList columns;
    for (const std::string& c : v.columns) columns << QString::fromStdString(c);
    table->setColumnCount(columns.size());
    table->setHorizontalHeaderLabels(columns);
    table->setRowCount(static_cast<int>(v.rows.size()));
    for (size_t r = 0; r < v.rows.size(); ++r) {
      const PodView::Row& row = v.rows[r];
      for (size_t c = 0; c < row.cells.size() && c < v.columns.size(); ++c) {
        auto* item = new QTableWidgetItem(QString::fromStdString(row.cells[c]));
        if (c > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        table->setItem(static_cast<int>(r), static_cast<int>(c), item);
      }
    }
    table->resizeColumnsToContents();
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
  // The step's slice is selected; the view shows the step's whole window,
  // which runs on to the end of the device work the step launched.
  const PodStep& step = r.steps[row];
  emit eventRequested(step.event);
  emit timesRequested(
      step.start_ns,
      base::SaturatingAdd(step.start_ns,
                          std::max<int64_t>(step.duration_ns, 1)));
  ShowCriticalPath(row);
}

void PodPanel::ShowCriticalPath(int row) {
  path_events_.clear();
  path_->clear();
  path_->hide();
  if (!store_ || !model_.steps || !model_.stragglers) return;
  const CriticalPath p =
      AnalyzeCriticalPath(*store_, *model_.steps, *model_.stragglers, row);
  if (p.segments.empty()) return;
  for (const PathSegment& s : p.segments) {
    if (s.has_event &&
        (path_events_.empty() || path_events_.back() != s.event)) {
      path_events_.push_back(s.event);
    }
  }
  QStringList parts;
  for (int c = 0; c < kStepCategoryCount; ++c) {
    if (p.by_category[c] <= 0) continue;
    parts << tr("%1 %2")
                 .arg(QString::fromStdString(std::string(
                     StepCategoryName(static_cast<StepCategory>(c)))))
                 .arg(D(p.by_category[c]));
  }
  size_t most = 0;
  for (size_t r = 1; r < p.by_rank.size(); ++r) {
    if (p.by_rank[r] > p.by_rank[most]) most = r;
  }
  QString waits;
  for (const PathSegment& s : p.segments) {
    if (!s.note.empty()) {
      waits = tr("; %1").arg(QString::fromStdString(s.note));
      break;
    }
  }
  const int most_rank =
      most < model_.steps->ranks.size() ? model_.steps->ranks[most].rank : 0;
  path_->setText(
      tr("Critical path of step %1 (%2, outlined): %3; most on rank %4%5.")
          .arg(p.step)
          .arg(D(p.length_ns()))
          .arg(parts.join(", "))
          .arg(most_rank)
          .arg(waits));
  path_->show();
  emit peersChanged(path_events_);
}

void PodPanel::ActivateViewRow(size_t view, int row) {
  if (view >= model_.views.size() || row < 0 ||
      static_cast<size_t>(row) >= model_.views[view].rows.size()) {
    return;
  }
  const PodView::Row& r = model_.views[view].rows[row];
  // A row may name an event, a time window, or both (a step: its slice,
  // and its window to the end of its device work).
  if (r.event) emit eventRequested(*r.event);
  if (r.t1 > r.t0) emit timesRequested(r.t0, r.t1);
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
