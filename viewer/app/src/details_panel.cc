#include "details_panel.h"

#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <variant>

#include "hit_test.h"
#include "pod_model.h"
#include "podscope/base/human_format.h"
#include "time_format.h"

namespace podscope::viewer::app {
namespace {

using trace_format::EventKind;
using trace_format::FlowPhase;

QString Str(const TraceStore& store, StringId id) {
  const std::string_view s = store.str(id);
  return QString::fromUtf8(s.data(), static_cast<int>(s.size()));
}

QString Duration(int64_t ns) {
  return QString::fromStdString(FormatDuration(ns));
}

constexpr QChar kBreak(0x200B);

// An integer argument as people read it: a time (a key ending in "_ns",
// such as a collective's wait_ns) or a size (a key ending in "bytes") in
// units, the exact number in the tooltip; others as they are.
QTableWidgetItem* IntArgItem(const QString& key, int64_t v) {
  if (key.endsWith(QLatin1String("_ns"))) {
    auto* item = new QTableWidgetItem(Duration(v));
    item->setToolTip(QStringLiteral("%1 ns").arg(v));
    return item;
  }
  if (key.endsWith(QLatin1String("bytes")) && v >= 0) {
    auto* item = new QTableWidgetItem(
        QString::fromStdString(base::FormatBytes(static_cast<double>(v))));
    item->setToolTip(QStringLiteral("%1 bytes").arg(v));
    return item;
  }
  return new QTableWidgetItem(QString::number(v));
}

// A table in the details' column: the first columns as wide as their
// text, the last one the rest of the width, values wrapping rather than
// being cut.
void FitTable(QTableWidget* table) {
  QHeaderView* header = table->horizontalHeader();
  for (int c = 0; c + 1 < table->columnCount(); ++c) {
    header->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  }
  header->setSectionResizeMode(table->columnCount() - 1, QHeaderView::Stretch);
  table->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  table->setWordWrap(true);
  table->verticalHeader()->setVisible(false);
  table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
}

// Tall enough for every row, up to `max_rows` rows' worth; beyond that it
// scrolls.
void FitHeight(QTableWidget* table, int max_rows) {
  int rows = 0;
  for (int r = 0; r < table->rowCount() && r < max_rows; ++r) {
    rows += table->verticalHeader()->sectionSizeHint(r);
  }
  const int frame = 2 * table->frameWidth();
  table->setFixedHeight(table->horizontalHeader()->sizeHint().height() + rows +
                        frame);
}

// "rank i", or host and pid when the file names no rank.
QString RankText(const ProcessInfo& p) {
  return p.process_index >= 0 ? QObject::tr("rank %1").arg(p.process_index)
                              : QStringLiteral("%1 %2")
                                    .arg(QString::fromStdString(p.host_name))
                                    .arg(p.pid);
}

}  // namespace

QString BreakableText(const QString& text, int max_run) {
  static const QString kSeparators = QStringLiteral("›/._-:,");
  QString out;
  out.reserve(text.size() + text.size() / 8);
  int run = 0;
  for (int i = 0; i < text.size(); ++i) {
    const QChar c = text[i];
    // Keep surrogate pairs together.
    if (run >= max_run && !c.isLowSurrogate() && !c.isSpace()) {
      out += kBreak;
      run = 0;
    }
    out += c;
    if (c.isSpace()) {
      run = 0;
    } else if (kSeparators.contains(c) && i + 1 < text.size() &&
               !text[i + 1].isSpace()) {
      out += kBreak;
      run = 0;
    } else {
      ++run;
    }
  }
  return out;
}

DetailsPanel::DetailsPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("details");
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(6, 6, 6, 6);
  placeholder_ =
      new QLabel(tr("Click an event on the timeline to see its "
                    "details here."));
  placeholder_->setWordWrap(true);
  placeholder_->setStyleSheet("color: #667;");
  outer->addWidget(placeholder_);
  body_ = new QWidget;
  auto* body = new QVBoxLayout(body_);
  body->setContentsMargins(0, 0, 0, 0);
  auto* form = new QFormLayout;
  form->setLabelAlignment(Qt::AlignRight);
  body->addLayout(form);
  auto add = [&](const QString& key, const QString& label) {
    auto* value = new QLabel;
    value->setObjectName("details." + key);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setWordWrap(true);
    // Names are shown as they are, never as HTML.
    value->setTextFormat(Qt::PlainText);
    // A long value wraps to the panel's width rather than widening it.
    value->setMinimumWidth(1);
    value->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    form->addRow(label, value);
    fields_[key] = value;
  };
  add("name", tr("Name"));
  fields_["name"]->setStyleSheet("font-weight: bold;");
  add("start", tr("Start"));
  add("duration", tr("Duration"));
  add("self", tr("Self time"));
  add("track", tr("Track"));
  add("scope", tr("User scope"));
  add("enclosing", tr("Inside"));
  args_label_ = new QLabel(tr("Arguments"));
  body->addWidget(args_label_);
  args_ = new QTableWidget(0, 2);
  args_->setObjectName("details.args");
  args_->setHorizontalHeaderLabels({tr("Key"), tr("Value")});
  FitTable(args_);
  body->addWidget(args_);
  peers_label_ = new QLabel(tr("Peers (click to show)"));
  body->addWidget(peers_label_);
  peers_ = new QTableWidget(0, 3);
  peers_->setObjectName("details.peers");
  peers_->setHorizontalHeaderLabels({tr("Rank"), tr("Arrived"), tr("Waited")});
  peers_->setSelectionBehavior(QAbstractItemView::SelectRows);
  FitTable(peers_);
  body->addWidget(peers_);
  connect(peers_, &QTableWidget::cellActivated, this, [this](int row, int) {
    if (row >= 0 && row < static_cast<int>(peer_targets_.size())) {
      emit followRequested(peer_targets_[row]);
    }
  });
  connect(peers_, &QTableWidget::cellClicked, this, [this](int row, int) {
    if (row >= 0 && row < static_cast<int>(peer_targets_.size())) {
      emit followRequested(peer_targets_[row]);
    }
  });
  flows_label_ = new QLabel(tr("Flows (click to follow)"));
  body->addWidget(flows_label_);
  flows_ = new QListWidget;
  flows_->setObjectName("details.flows");
  flows_->setMaximumHeight(140);
  // A flow's text wraps to the panel's width rather than running past it.
  flows_->setWordWrap(true);
  flows_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  flows_->setResizeMode(QListView::Adjust);
  body->addWidget(flows_);
  connect(flows_, &QListWidget::itemClicked, this, [this](QListWidgetItem* it) {
    if (auto target = flow_target(flows_->row(it)))
      emit followRequested(*target);
  });
  connect(flows_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* it) {
            if (auto target = flow_target(flows_->row(it))) {
              emit followRequested(*target);
            }
          });
  body->addStretch(1);
  outer->addWidget(body_);
  body_->hide();
}

void DetailsPanel::SetStore(std::shared_ptr<const TraceStore> store) {
  store_ = std::move(store);
  ShowEvent(std::nullopt);
}

QString DetailsPanel::field(const QString& key) const {
  auto it = fields_.find(key);
  return it == fields_.end() ? QString()
                             : QString((*it)->text()).remove(kBreak);
}

std::optional<EventRef> DetailsPanel::flow_target(int row) const {
  if (row < 0 || row >= static_cast<int>(flow_targets_.size())) {
    return std::nullopt;
  }
  return flow_targets_[row];
}

void DetailsPanel::ShowArgs(const EventRef& e) {
  const TraceStore& s = *store_;
  if (const trace_format::EventArgs* args = s.FindArgs(e)) {
    args_->setRowCount(static_cast<int>(args->args.size()));
    int row = 0;
    for (const trace_format::Arg& a : args->args) {
      const QString key = Str(s, a.key);
      QTableWidgetItem* value = nullptr;
      if (const auto* i = std::get_if<int64_t>(&a.value)) {
        value = IntArgItem(key, *i);
      } else if (const auto* d = std::get_if<double>(&a.value)) {
        value = new QTableWidgetItem(QString::number(*d, 'g', 10));
      } else if (const auto* sid =
                     std::get_if<trace_format::StringId>(&a.value)) {
        value = new QTableWidgetItem(Str(s, sid->id));
      } else {
        value = new QTableWidgetItem;
      }
      args_->setItem(row, 0, new QTableWidgetItem(key));
      args_->setItem(row, 1, value);
      ++row;
    }
  }
  args_label_->setVisible(args_->rowCount() > 0);
  args_->setVisible(args_->rowCount() > 0);
  FitHeight(args_, 12);
}

void DetailsPanel::ShowPeers(const EventRef& e) {
  peer_targets_.clear();
  peers_->setRowCount(0);
  const TraceStore& s = *store_;
  std::vector<EventRef> peers = CollectivePeers(s, e);
  const bool shown = peers.size() >= 2;
  peers_label_->setVisible(shown);
  peers_->setVisible(shown);
  if (!shown) return;
  auto rank_of = [&](const EventRef& p) {
    return s.processes()[s.tracks()[p.track].process].process_index;
  };
  std::stable_sort(peers.begin(), peers.end(),
                   [&](const EventRef& a, const EventRef& b) {
                     return rank_of(a) < rank_of(b);
                   });
  int64_t first = s.StartOf(peers.front());
  int64_t last = first;
  for (const EventRef& p : peers) {
    first = std::min(first, s.StartOf(p));
    last = std::max(last, s.StartOf(p));
  }
  const std::optional<StringId> wait_key = s.FindString("wait_ns");
  peers_->setRowCount(static_cast<int>(peers.size()));
  for (size_t i = 0; i < peers.size(); ++i) {
    const EventRef& p = peers[i];
    const int64_t arrived = s.StartOf(p);
    // The wait the runtime measured when it recorded one, else until the
    // last rank arrived.
    int64_t waited = last - arrived;
    if (const trace_format::EventArgs* args = s.FindArgs(p); args && wait_key) {
      for (const trace_format::Arg& a : args->args) {
        const auto* v = std::get_if<int64_t>(&a.value);
        if (a.key == *wait_key && v != nullptr) waited = *v;
      }
    }
    QString rank = RankText(s.processes()[s.tracks()[p.track].process]);
    if (arrived == last && last > first) rank += tr(" (arrived last)");
    auto* rank_item = new QTableWidgetItem(rank);
    rank_item->setToolTip(QString::fromStdString(TrackPath(s, p.track)));
    auto* arrived_item = new QTableWidgetItem(
        arrived == first
            ? tr("first")
            : QStringLiteral("+%1").arg(Duration(arrived - first)));
    arrived_item->setToolTip(
        tr("%1 ns after the first arrival").arg(arrived - first));
    auto* waited_item = new QTableWidgetItem(Duration(waited));
    waited_item->setToolTip(QStringLiteral("%1 ns").arg(waited));
    const int row = static_cast<int>(i);
    peers_->setItem(row, 0, rank_item);
    peers_->setItem(row, 1, arrived_item);
    peers_->setItem(row, 2, waited_item);
    if (p == e) peers_->selectRow(row);
    peer_targets_.push_back(p);
  }
  FitHeight(peers_, 16);
}

void DetailsPanel::ShowEvent(std::optional<EventRef> event) {
  flow_targets_.clear();
  flows_->clear();
  args_->setRowCount(0);
  peer_targets_.clear();
  peers_->setRowCount(0);
  if (!event || !store_ || event->track >= store_->tracks().size()) {
    for (QLabel* l : fields_) l->clear();
    body_->hide();
    placeholder_->show();
    return;
  }
  placeholder_->hide();
  body_->show();
  const TraceStore& s = *store_;
  const EventRef e = *event;
  const StringId name_id = s.NameOf(e);
  const QString name = Str(s, name_id);
  fields_["name"]->setText(BreakableText(name));
  const int64_t start = s.StartOf(e);
  fields_["start"]->setText(tr("%1 from the trace start (%2 ns)")
                                .arg(Duration(start - s.first_ns()))
                                .arg(start));
  if (e.kind == EventKind::kSlice) {
    const SliceColumns& columns = s.data(e.track).slices;
    fields_["duration"]->setText(Duration(s.DurationOf(e)));
    fields_["self"]->setText(Duration(columns.SelfTime(e.index)));
  } else {
    fields_["duration"]->setText(tr("instant"));
    fields_["self"]->setText(QString());
  }
  const QString track = QString::fromStdString(TrackPath(s, e.track));
  fields_["track"]->setText(BreakableText(track));
  fields_["track"]->setToolTip(track);
  const std::string_view scope = ScopeOfName(s.str(name_id));
  const std::vector<EventRef> enclosing = EnclosingSlices(s, e);
  QStringList chain;
  for (const EventRef& p : enclosing) chain << Str(s, s.NameOf(p));
  QString scope_text;
  if (!scope.empty()) {
    scope_text =
        QString::fromUtf8(scope.data(), static_cast<int>(scope.size()));
  } else if (!chain.isEmpty()) {
    scope_text = chain.back();
  } else {
    // A device op without a scope of its own: the host scope that launched
    // it, through its incoming flow.
    for (const TraceStore::FlowEnd& f : s.Flows(e)) {
      if (f.phase != FlowPhase::kBegin) continue;
      QStringList up;
      for (const EventRef& p : EnclosingSlices(s, f.event)) {
        up << Str(s, s.NameOf(p));
      }
      up << Str(s, s.NameOf(f.event));
      scope_text = tr("%1 (launched by)").arg(up.join(" › "));
      break;
    }
  }
  fields_["scope"]->setText(scope_text.isEmpty() ? tr("(none)")
                                                 : BreakableText(scope_text));
  fields_["enclosing"]->setText(
      chain.isEmpty() ? tr("(top level)") : BreakableText(chain.join(" › ")));

  ShowArgs(e);
  ShowPeers(e);

  for (const TraceStore::FlowEnd& f : s.Flows(e)) {
    const bool incoming = f.phase == FlowPhase::kBegin;
    const int64_t other_start = s.StartOf(f.event);
    const QString text =
        QStringLiteral("%1 %2  ·  %3  ·  at %4  (flow %5)")
            .arg(incoming ? QStringLiteral("←") : QStringLiteral("→"))
            .arg(Str(s, s.NameOf(f.event)))
            .arg(QString::fromStdString(TrackPath(s, f.event.track)))
            .arg(Duration(other_start - s.first_ns()))
            .arg(f.flow_id);
    auto* item = new QListWidgetItem(text, flows_);
    item->setToolTip(incoming ? tr("Comes from this event; click to go there")
                              : tr("Leads to this event; click to go there"));
    flow_targets_.push_back(f.event);
  }
  flows_label_->setVisible(!flow_targets_.empty());
  flows_->setVisible(!flow_targets_.empty());
}

}  // namespace podscope::viewer::app
