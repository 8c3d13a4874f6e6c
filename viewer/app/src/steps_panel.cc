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
      {tr("Host"), tr("Steps"), tr("Mean"), tr("Min"), tr("Max"), tr("Total")});
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  layout->addWidget(table_);
  connect(table_, &QTableWidget::cellActivated, this, [this](int row, int) {
    const QTableWidgetItem* item = table_->item(row, 0);
    if (item == nullptr) return;
    const size_t i = item->data(Qt::UserRole).toULongLong();
    if (i >= steps_.size() || steps_[i].steps.empty()) return;
    const Step* slowest = &steps_[i].steps.front();
    for (const Step& s : steps_[i].steps) {
      if (s.duration_ns > slowest->duration_ns) slowest = &s;
    }
    emit stepRequested(slowest->event);
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
    std::vector<HostSteps> steps = StepTable(*s);
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

void StepsPanel::Show(std::vector<HostSteps> steps) {
  steps_ = std::move(steps);
  table_->setSortingEnabled(false);
  table_->setRowCount(static_cast<int>(steps_.size()));
  for (size_t i = 0; i < steps_.size(); ++i) {
    const HostSteps& h = steps_[i];
    const int r = static_cast<int>(i);
    auto* host = new QTableWidgetItem(QString::fromStdString(h.host_name));
    host->setData(Qt::UserRole, static_cast<qulonglong>(i));
    table_->setItem(r, 0, host);
    table_->setItem(
        r, 1,
        new NumberItem(QString::number(h.count), static_cast<double>(h.count)));
    table_->setItem(
        r, 2, new NumberItem(D(h.mean_ns()), static_cast<double>(h.mean_ns())));
    table_->setItem(r, 3,
                    new NumberItem(D(h.min_ns), static_cast<double>(h.min_ns)));
    table_->setItem(r, 4,
                    new NumberItem(D(h.max_ns), static_cast<double>(h.max_ns)));
    table_->setItem(
        r, 5, new NumberItem(D(h.total_ns), static_cast<double>(h.total_ns)));
  }
  table_->setSortingEnabled(true);
  note_->setText(
      steps_.empty()
          ? tr("No step markers: slices whose name contains \"step\" are "
               "counted as training steps.")
          : tr("Outermost slices whose name contains \"step\", per host. "
               "Double-click a host to show its slowest step."));
}

}  // namespace podscope::viewer::app
