#include "query_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <chrono>
#include <variant>

namespace podscope::viewer::app {
namespace {

QString Text(const QueryValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return QString::number(*i);
  if (const auto* d = std::get_if<double>(&v))
    return QString::number(*d, 'g', 15);
  if (const auto* s = std::get_if<std::string>(&v)) {
    return QString::fromStdString(*s);
  }
  return QString();
}

}  // namespace

QueryPanel::QueryPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("query");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* line = new QHBoxLayout;
  editor_ = new QLineEdit;
  editor_->setObjectName("query.sql");
  editor_->setPlaceholderText(
      tr("SELECT name, count(*), sum(dur) FROM slices GROUP BY name ORDER BY "
         "3 DESC LIMIT 20"));
  run_ = new QPushButton(tr("Run"));
  line->addWidget(editor_, 1);
  line->addWidget(run_);
  layout->addLayout(line);
  status_ = new QLabel(
      tr("Tables: slices, counters, flows, steps, collectives, compiles, "
         "processes, threads (docs/analysis.md)."));
  status_->setWordWrap(true);
  layout->addWidget(status_);
  table_ = new QTableWidget(0, 0);
  table_->setObjectName("query.table");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  layout->addWidget(table_, 1);
  auto run = [this] {
    Run(editor_->text().isEmpty() ? editor_->placeholderText()
                                  : editor_->text());
  };
  connect(run_, &QPushButton::clicked, this, run);
  connect(editor_, &QLineEdit::returnPressed, this, run);
  connect(table_, &QTableWidget::cellClicked, this,
          [this](int row, int) { ActivateRow(row); });
}

QueryPanel::~QueryPanel() { Join(); }

void QueryPanel::Join() {
  if (worker_.joinable()) worker_.join();
}

void QueryPanel::SetStore(std::shared_ptr<const TraceStore> store) {
  Join();
  store_ = std::move(store);
  table_->setRowCount(0);
  table_->setColumnCount(0);
  ids_.clear();
}

void QueryPanel::Run(const QString& sql) {
  if (!store_ || busy_) return;
  Join();
  busy_ = true;
  run_->setEnabled(false);
  status_->setText(tr("Running…"));
  worker_ = std::thread([this, store = store_, text = sql.toStdString()] {
    auto r = std::make_shared<Result>();
    const auto t0 = std::chrono::steady_clock::now();
    auto q = SessionQuery::Create(*store);
    if (!q.ok()) {
      r->error = QString::fromStdString(std::string(q.status().message()));
    } else {
      const absl::Status s =
          (*q)->Run(text, &r->columns, [&](const std::vector<QueryValue>& row) {
            if (r->rows.size() >= static_cast<size_t>(kMaxRows)) {
              r->truncated = true;
              return false;
            }
            r->rows.push_back(row);
            return true;
          });
      if (!s.ok()) r->error = QString::fromStdString(std::string(s.message()));
    }
    r->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    QMetaObject::invokeMethod(
        this, [this, r] { Show(r); }, Qt::QueuedConnection);
  });
}

void QueryPanel::Show(std::shared_ptr<Result> r) {
  busy_ = false;
  run_->setEnabled(true);
  ids_.clear();
  id_column_ = -1;
  if (!r->error.isEmpty()) {
    status_->setText(tr("Error: %1").arg(r->error));
    emit finished();
    return;
  }
  table_->setRowCount(0);
  table_->setColumnCount(static_cast<int>(r->columns.size()));
  QStringList headers;
  for (size_t c = 0; c < r->columns.size(); ++c) {
    headers << QString::fromStdString(r->columns[c]);
    if (id_column_ < 0 &&
        (r->columns[c] == "id" || r->columns[c] == "slice_id")) {
      id_column_ = static_cast<int>(c);
    }
  }
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(static_cast<int>(r->rows.size()));
  for (size_t i = 0; i < r->rows.size(); ++i) {
    for (size_t c = 0; c < r->rows[i].size(); ++c) {
      table_->setItem(static_cast<int>(i), static_cast<int>(c),
                      new QTableWidgetItem(Text(r->rows[i][c])));
    }
    const QueryValue* id = id_column_ >= 0
                               ? &r->rows[i][static_cast<size_t>(id_column_)]
                               : nullptr;
    ids_.push_back(id && std::holds_alternative<int64_t>(*id)
                       ? std::get<int64_t>(*id)
                       : -1);
  }
  table_->resizeColumnsToContents();
  status_->setText(
      tr("%1 rows%2 in %3 s%4")
          .arg(r->rows.size())
          .arg(r->truncated ? tr(" (the first %1)").arg(kMaxRows) : QString())
          .arg(r->seconds, 0, 'f', 3)
          .arg(id_column_ >= 0 ? tr("; click a row to show its slice")
                               : QString()));
  emit finished();
}

void QueryPanel::ActivateRow(int row) {
  if (!store_ || row < 0 || static_cast<size_t>(row) >= ids_.size()) return;
  const int64_t id = ids_[static_cast<size_t>(row)];
  if (id < 0) return;
  const TrackId track = static_cast<TrackId>(static_cast<uint64_t>(id) >> 32);
  const uint32_t index = static_cast<uint32_t>(id & 0xffffffffu);
  if (track >= store_->tracks().size() ||
      index >= store_->data(track).slices.size()) {
    return;
  }
  emit eventRequested({track, trace_format::EventKind::kSlice, index});
}

}  // namespace podscope::viewer::app
