#include "stats_panel.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMetaObject>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "time_format.h"

namespace podscope::viewer::app {

StatsModel::StatsModel(QObject* parent) : QAbstractTableModel(parent) {}

void StatsModel::SetRows(std::shared_ptr<const TraceStore> store,
                         std::vector<NameStats> rows) {
  beginResetModel();
  store_ = std::move(store);
  rows_ = std::move(rows);
  endResetModel();
}

int StatsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int StatsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumns;
}

QVariant StatsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size()) ||
      !store_) {
    return {};
  }
  const NameStats& r = rows_[index.row()];
  auto name = [&] {
    const std::string_view s = store_->str(r.name);
    return QString::fromUtf8(s.data(), static_cast<int>(s.size()));
  };
  auto host = [&] {
    if (r.host == kAllHosts || r.host >= store_->hosts().size()) {
      return QStringLiteral("all");
    }
    QString text = QString::fromStdString(store_->hosts()[r.host].name);
    if (r.process < store_->processes().size()) {
      const ProcessInfo& p = store_->processes()[r.process];
      text += p.process_index >= 0
                  ? QStringLiteral(" · rank %1").arg(p.process_index)
                  : QStringLiteral(" · pid %1").arg(p.pid);
    }
    return text;
  };
  auto number = [&](int column) -> qlonglong {
    switch (column) {
      case kCount:
        return static_cast<qlonglong>(r.count);
      case kTotal:
        return r.total_ns;
      case kSelf:
        return r.self_ns;
      case kMin:
        return r.min_ns;
      case kMean:
        return r.mean_ns();
      case kMax:
        return r.max_ns;
      default:
        return 0;
    }
  };
  if (role == Qt::DisplayRole || role == kSortRole) {
    switch (index.column()) {
      case kName:
        return name();
      case kHost:
        return host();
      case kCount:
        return role == kSortRole ? QVariant(number(kCount))
                                 : QVariant(QString::number(r.count));
      default:
        if (role == kSortRole) return number(index.column());
        return QString::fromStdString(FormatDuration(number(index.column())));
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= kCount) {
    return int(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role == Qt::ToolTipRole && index.column() >= kTotal) {
    return QStringLiteral("%1 ns").arg(number(index.column()));
  }
  return {};
}

QVariant StatsModel::headerData(int section, Qt::Orientation orientation,
                                int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"Name", "Host · rank", "Count", "Total",
                                       "Self", "Min",         "Mean",  "Max"};
  return section >= 0 && section < kColumns ? QString(kNames[section])
                                            : QVariant();
}

StatsPanel::StatsPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("stats");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  summary_ = new QLabel;
  summary_->setObjectName("stats.summary");
  bar->addWidget(summary_, 1);
  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("filter names"));
  filter_->setClearButtonEnabled(true);
  filter_->setMaximumWidth(220);
  bar->addWidget(filter_);
  by_host_ = new QCheckBox(tr("Per host"));
  by_host_->setObjectName("stats.by_host");
  bar->addWidget(by_host_);
  layout->addLayout(bar);
  model_ = new StatsModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(StatsModel::kSortRole);
  proxy_->setFilterKeyColumn(StatsModel::kName);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  view_ = new QTableView;
  view_->setObjectName("stats.table");
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(StatsModel::kTotal, Qt::DescendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->verticalHeader()->setVisible(false);
  view_->verticalHeader()->setDefaultSectionSize(20);
  view_->horizontalHeader()->setSectionResizeMode(StatsModel::kName,
                                                  QHeaderView::Stretch);
  view_->setColumnHidden(StatsModel::kHost, true);
  layout->addWidget(view_);
  connect(by_host_, &QCheckBox::toggled, this, [this](bool on) {
    view_->setColumnHidden(StatsModel::kHost, !on);
    Recompute();
  });
  connect(filter_, &QLineEdit::textChanged, proxy_,
          &QSortFilterProxyModel::setFilterFixedString);
}

StatsPanel::~StatsPanel() = default;

void StatsPanel::SetStore(std::shared_ptr<const TraceStore> store) {
  store_ = std::move(store);
  model_->SetRows(store_, {});
  if (store_) {
    SetRange(store_->first_ns(), store_->last_ns() + 1, true);
  } else {
    summary_->clear();
  }
}

void StatsPanel::SetRange(int64_t t0, int64_t t1, bool whole_trace) {
  t0_ = t0;
  t1_ = t1;
  whole_ = whole_trace;
  Recompute();
}

QString StatsPanel::summary_text() const { return summary_->text(); }

void StatsPanel::Recompute() {
  if (!store_) return;
  const uint64_t generation = ++generation_;
  const QString where =
      whole_ ? tr("whole trace")
             : tr("range %1 from +%2")
                   .arg(QString::fromStdString(FormatDuration(t1_ - t0_)))
                   .arg(QString::fromStdString(
                       FormatDuration(t0_ - store_->first_ns())));
  summary_->setText(tr("Computing statistics of the %1…").arg(where));
  std::shared_ptr<const TraceStore> store = store_;
  StatsOptions options;
  // Per host means per rank too: ranks sharing a host are told apart.
  options.by_host = by_host_->isChecked();
  options.by_process = by_host_->isChecked();
  options.threads = 0;
  StatsPanel* self = this;
  const int64_t t0 = t0_, t1 = t1_;
  runner_.Post([self, store, options, t0, t1, generation, where] {
    std::vector<NameStats> rows = RangeStats(*store, t0, t1, options);
    QMetaObject::invokeMethod(
        self,
        [self, store, generation, where, rows = std::move(rows)]() mutable {
          if (generation != self->generation_) return;
          self->done_generation_ = generation;
          uint64_t slices = 0;
          for (const NameStats& r : rows) slices += r.count;
          self->model_->SetRows(store, std::move(rows));
          self->summary_->setText(tr("%1 names, %2 slices in the %3")
                                      .arg(self->model_->rowCount())
                                      .arg(slices)
                                      .arg(where));
          emit self->updated();
        },
        Qt::QueuedConnection);
  });
}

}  // namespace podscope::viewer::app
