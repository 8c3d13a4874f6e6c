#include "compare_window.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "event_pump.h"
#include "podscope/base/numeric.h"
#include "time_format.h"
#include "timeline_widget.h"

namespace podscope::viewer::app {
namespace {

QString Dur(double ns) {
  return QString::fromStdString(
      FormatDuration(static_cast<int64_t>(std::llround(ns))));
}

QString Change(const DiffFigure& f) {
  return QStringLiteral("%1%2 %")
      .arg(f.change() >= 0 ? "+" : "")
      .arg(100 * f.change(), 0, 'f', 1);
}

QString Judgement(const DiffFigure& f) {
  if (!f.significant) return QObject::tr("noise");
  return f.delta_ns() > 0 ? QObject::tr("slower") : QObject::tr("faster");
}

// The rank's index in the breakdown, -1 when absent.
int IndexOfRank(const StepBreakdown& steps, int rank) {
  for (size_t i = 0; i < steps.ranks.size(); ++i) {
    if (steps.ranks[i].rank == rank) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

CompareWindow::CompareWindow(QWidget* parent) : QWidget(parent) {
  setWindowTitle(tr("Compare sessions"));
  auto* layout = new QHBoxLayout(this);
  auto* split = new QSplitter(Qt::Horizontal, this);
  layout->addWidget(split);

  auto* views = new QSplitter(Qt::Vertical, split);
  for (int i = 0; i < 2; ++i) {
    auto* box = new QWidget(views);
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 0, 0);
    titles_[i] = new QLabel(i == 0 ? tr("Baseline") : tr("Candidate"), box);
    timelines_[i] = new TimelineWidget(box);
    v->addWidget(titles_[i]);
    v->addWidget(timelines_[i], 1);
  }

  auto* side = new QWidget(split);
  auto* s = new QVBoxLayout(side);
  verdict_ = new QLabel(tr("Loading…"), side);
  verdict_->setWordWrap(true);
  table_ = new QTableWidget(0, 6, side);
  table_->setHorizontalHeaderLabels({tr("figure"), tr("baseline"),
                                     tr("candidate"), tr("change"), tr("p"),
                                     tr("")});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  connect(table_, &QTableWidget::cellClicked, this,
          [this](int row, int) { ActivateRow(row); });
  s->addWidget(verdict_);
  s->addWidget(table_, 1);
  // The diff's six columns fit beside timelines that keep most room.
  split->setSizes({900, 700});
  resize(1600, 1000);
}

CompareWindow::~CompareWindow() {
  if (worker_.joinable()) worker_.join();
}

void CompareWindow::Open(const QString& baseline, const QString& candidate) {
  if (worker_.joinable()) worker_.join();
  busy_ = true;
  titles_[0]->setText(tr("Baseline: %1").arg(baseline));
  titles_[1]->setText(tr("Candidate: %1").arg(candidate));
  verdict_->setText(tr("Loading both sessions…"));
  const std::string paths[2] = {baseline.toStdString(),
                                candidate.toStdString()};
  worker_ = std::thread([this, b = paths[0], c = paths[1]] {
    auto r = std::make_shared<Result>();
    const std::string* p[2] = {&b, &c};
    for (int i = 0; i < 2 && r->error.isEmpty(); ++i) {
      auto store = TraceStore::Open(*p[i]);
      if (!store.ok()) {
        r->error = tr("%1: %2")
                       .arg(QString::fromStdString(*p[i]))
                       .arg(QString::fromStdString(
                           std::string(store.status().message())));
        break;
      }
      r->store[i] = std::move(*store);
      r->steps[i] = AnalyzeSteps(*r->store[i]);
    }
    if (r->error.isEmpty()) r->diff = DiffSessions(*r->store[0], *r->store[1]);
    QMetaObject::invokeMethod(
        this, [this, r] { Show(r); }, Qt::QueuedConnection);
  });
}

bool CompareWindow::WaitUntilIdle(int timeout_ms) {
  return PumpEventsWhile([this] { return busy(); }, timeout_ms);
}

void CompareWindow::AddRow(const std::vector<QString>& cells, bool significant,
                           Link link) {
  const int row = table_->rowCount();
  table_->insertRow(row);
  for (size_t c = 0; c < cells.size(); ++c) {
    auto* item = new QTableWidgetItem(cells[c]);
    if (significant) item->setBackground(QColor(255, 228, 200));
    table_->setItem(row, static_cast<int>(c), item);
  }
  links_.push_back(std::move(link));
}

void CompareWindow::Show(std::shared_ptr<Result> result) {
  result_ = std::move(result);
  links_.clear();
  table_->setRowCount(0);
  if (!result_->error.isEmpty()) {
    verdict_->setText(tr("Cannot compare: %1").arg(result_->error));
    busy_ = false;
    emit loaded();
    return;
  }
  for (int i = 0; i < 2; ++i) timelines_[i]->SetStore(result_->store[i]);
  const SessionDiff& d = result_->diff;
  verdict_->setText(QString::fromStdString(DiffVerdict(d)));
  auto figure = [&](const QString& label, const DiffFigure& f, Link link) {
    link.value[0] = f.base_ns;
    link.value[1] = f.cand_ns;
    AddRow({label, Dur(f.base_ns), Dur(f.cand_ns), Change(f),
            QString::number(f.test.p_value, 'g', 2), Judgement(f)},
           f.significant, std::move(link));
  };
  figure(tr("step time median (job)"), d.step_median,
         {Link::Kind::kJobStep, -1, {}, {}});
  figure(tr("step time p90 (job)"), d.step_p90,
         {Link::Kind::kJobStep, -1, {}, {}});
  for (const RankDiff& r : d.per_rank) {
    figure(tr("%1 median").arg(QString::fromStdString(r.label)), r.median,
           {Link::Kind::kRankStep, r.rank, {}, {}});
  }
  for (const DiffFigure& c : d.categories) {
    figure(QString::fromStdString(c.name), c,
           {Link::Kind::kJobStep, -1, {}, {}});
  }
  auto named = [&](const NamedChange& c, const QString& prefix) {
    const std::string name = c.figure.name.substr(c.figure.name.find(':') + 1);
    Link link{Link::Kind::kName, c.rank, name, {}};
    figure(prefix + QString::fromStdString(c.figure.name), c.figure,
           std::move(link));
  };
  for (const NamedChange& c : d.changes) named(c, "");
  for (const NamedChange& c : d.appeared) named(c, tr("new: "));
  for (const NamedChange& c : d.vanished) named(c, tr("gone: "));
  const RecompileDiff& rc = d.recompiles;
  AddRow(
      {tr("recompiles (misses)"), QString::number(rc.base_misses),
       QString::number(rc.cand_misses),
       QString::number(static_cast<int64_t>(rc.cand_misses) -
                       static_cast<int64_t>(rc.base_misses)),
       QString(),
       rc.new_misses.empty()
           ? QString()
           : tr("%1 new").arg(static_cast<qulonglong>(rc.new_misses.size()))},
      !rc.new_misses.empty(), {});
  table_->resizeColumnsToContents();
  busy_ = false;
  emit loaded();
}

void CompareWindow::ActivateRow(int row) {
  if (!result_ || row < 0 || static_cast<size_t>(row) >= links_.size()) return;
  for (int i = 0; i < 2; ++i) {
    if (result_->store[i]) ShowIn(i, links_[row]);
  }
}

void CompareWindow::ShowIn(int session, const Link& link) {
  if (link.kind == Link::Kind::kNone) return;
  const TraceStore& store = *result_->store[session];
  const StepBreakdown& steps = result_->steps[session];
  TimelineWidget* t = timelines_[session];
  const size_t first = std::min(DiffOptions{}.skip_steps, steps.rows.size());
  const int index =
      link.kind == Link::Kind::kJobStep ? -1 : IndexOfRank(steps, link.rank);
  if (link.kind != Link::Kind::kJobStep && index < 0) return;
  // The step nearest the figure's value: the job's (slowest rank per
  // step) or the rank's; for a name, the rank's median step.
  double target = link.value[session];
  if (link.kind == Link::Kind::kName) {
    std::vector<int64_t> d;
    for (size_t r = first; r < steps.rows.size(); ++r) {
      const StepCell& c = steps.rows[r].ranks[index];
      if (c.present) d.push_back(c.duration_ns);
    }
    target = static_cast<double>(base::Median(d));
  }
  int best = -1;
  double best_gap = std::numeric_limits<double>::infinity();
  int64_t t0 = 0, t1 = 0;
  for (size_t r = first; r < steps.rows.size(); ++r) {
    int64_t start = INT64_MAX, end = INT64_MIN, length = -1;
    for (size_t k = 0; k < steps.rows[r].ranks.size(); ++k) {
      const StepCell& c = steps.rows[r].ranks[k];
      if (!c.present || (index >= 0 && static_cast<int>(k) != index)) continue;
      start = std::min(start, c.start_ns);
      end = std::max(end, base::SaturatingAdd(c.start_ns, c.duration_ns));
      length = std::max(length, c.duration_ns);
    }
    if (length < 0) continue;
    const double gap = std::abs(static_cast<double>(length) - target);
    if (gap < best_gap) {
      best_gap = gap;
      best = static_cast<int>(r);
      t0 = start;
      t1 = end;
    }
  }
  if (best < 0) return;
  std::optional<EventRef> select;
  if (link.kind == Link::Kind::kRankStep) {
    select = steps.rows[best].ranks[index].event;
  } else if (link.kind == Link::Kind::kName) {
    // The longest slice of that name in the step, on the rank's tracks.
    const auto name = store.FindString(link.name);
    int64_t longest = -1;
    for (TrackId track : store.processes()[steps.ranks[index].process].tracks) {
      const SliceColumns& s = store.data(track).slices;
      for (uint32_t i = 0; name && i < s.size(); ++i) {
        if (s.name(i) != *name || s.start(i) < t0 || s.start(i) >= t1) {
          continue;
        }
        if (s.duration(i) > longest) {
          longest = s.duration(i);
          select = EventRef{track, trace_format::EventKind::kSlice, i};
        }
      }
    }
  }
  if (select) t->Select(*select, /*reveal=*/true);
  t->ZoomToTimes(t0, std::max(t1, t0 + 1));
}

}  // namespace podscope::viewer::app
