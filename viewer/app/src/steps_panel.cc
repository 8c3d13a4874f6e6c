#include "steps_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QMetaObject>
#include <QTableWidget>
#include <QVBoxLayout>

#include "time_format.h"

namespace podscope::viewer::app {
namespace {

// A table cell that sorts by a number while showing text.
class NumberItem : public QTableWidgetItem {
 public:
  NumberItem(const QString& text, double value)
      : QTableWidgetItem(text), value_(value) {
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  bool operator<(const QTableWidgetItem& other) const override {
    if (const auto* o = dynamic_cast<const NumberItem*>(&other)) {
      return value_ < o->value_;
    }
    return QTableWidgetItem::operator<(other);
  }

 private:
  double value_;
};

QString D(int64_t ns) { return QString::fromStdString(FormatDuration(ns)); }

}  // namespace

StepsPanel::StepsPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("steps");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  note_ = new QLabel;
  note_->setWordWrap(true);
  layout->addWidget(note_);
  table_ = new QTableWidget(0, 6);
  table_->setObjectName("steps.table");
  table_->setHorizontalHeaderLabels(
      {tr("Rank"), tr("Steps"), tr("Mean"), tr("Min"), tr("Max"), tr("Total")});
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  layout->addWidget(table_);
  connect(table_, &QTableWidget::cellActivated, this, [this](int row, int) {
    const QTableWidgetItem* item = table_->item(row, 0);
    if (item == nullptr) return;
    const size_t rank = item->data(Qt::UserRole).toULongLong();
    const StepCell* slowest = nullptr;
    for (const StepRow& r : steps_.rows) {
      if (rank >= r.ranks.size() || !r.ranks[rank].present) continue;
      if (slowest == nullptr ||
          r.ranks[rank].duration_ns > slowest->duration_ns) {
        slowest = &r.ranks[rank];
      }
    }
    if (slowest == nullptr) return;
    emit stepRequested(slowest->event, slowest->start_ns,
                       slowest->start_ns + slowest->duration_ns);
  });
}

StepsPanel::~StepsPanel() = default;

void StepsPanel::SetStore(std::shared_ptr<const TraceStore> store) {
  store_ = std::move(store);
  const uint64_t generation = ++generation_;
  Show({});
  if (!store_) {
    done_generation_ = generation;
    return;
  }
  note_->setText(tr("Looking for step markers…"));
  std::shared_ptr<const TraceStore> s = store_;
  StepsPanel* self = this;
  runner_.Post([self, s, generation] {
    StepBreakdown steps = AnalyzeSteps(*s);
    QMetaObject::invokeMethod(
        self,
        [self, generation, steps = std::move(steps)]() mutable {
          if (generation != self->generation_) return;
          self->done_generation_ = generation;
          self->Show(std::move(steps));
        },
        Qt::QueuedConnection);
  });
}

void StepsPanel::Show(StepBreakdown steps) {
  steps_ = std::move(steps);
  bands_.clear();
  const size_t n = steps_.ranks.size();
  std::vector<int64_t> min_ns(n, 0);
  for (size_t k = 0; k < steps_.rows.size(); ++k) {
    const StepRow& row = steps_.rows[k];
    for (size_t r = 0; r < row.ranks.size() && r < n; ++r) {
      const StepCell& c = row.ranks[r];
      if (!c.present) continue;
      bands_.push_back({steps_.ranks[r].process, row.step, c.start_ns,
                        c.start_ns + c.duration_ns});
      if (min_ns[r] == 0 || c.duration_ns < min_ns[r])
        min_ns[r] = c.duration_ns;
    }
  }
  table_->setSortingEnabled(false);
  table_->setRowCount(0);
  int shown = 0;
  for (size_t i = 0; i < n && i < steps_.totals.size(); ++i) {
    const RankStepTotals& t = steps_.totals[i];
    if (t.steps == 0) continue;
    const RankInfo& rank = steps_.ranks[i];
    const int r = shown++;
    table_->setRowCount(shown);
    auto* name =
        new NumberItem(tr("rank %1 · %2")
                           .arg(rank.rank)
                           .arg(QString::fromStdString(rank.host_name)),
                       rank.rank);
    name->setTextAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    name->setData(Qt::UserRole, static_cast<qulonglong>(i));
    table_->setItem(r, 0, name);
    const int64_t mean = t.total_ns / static_cast<int64_t>(t.steps);
    table_->setItem(
        r, 1,
        new NumberItem(QString::number(t.steps), static_cast<double>(t.steps)));
    table_->setItem(r, 2, new NumberItem(D(mean), static_cast<double>(mean)));
    table_->setItem(
        r, 3, new NumberItem(D(min_ns[i]), static_cast<double>(min_ns[i])));
    table_->setItem(r, 4,
                    new NumberItem(D(t.max_ns), static_cast<double>(t.max_ns)));
    table_->setItem(
        r, 5, new NumberItem(D(t.total_ns), static_cast<double>(t.total_ns)));
  }
  table_->setSortingEnabled(true);
  note_->setText(
      shown == 0
          ? tr("No step markers: slices named train_step or ProfilerStep#N, "
               "or whose name contains \"step\", are counted as training "
               "steps.")
          : tr("Steps per rank, as `podscope analyze` counts them: each "
               "step's window runs to the end of the device work it "
               "launched. Double-click a rank to show its slowest step."));
  emit stepsChanged();
}

}  // namespace podscope::viewer::app
