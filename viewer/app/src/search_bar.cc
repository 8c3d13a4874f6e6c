#include "search_bar.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QShortcut>
#include <QToolButton>
#include <algorithm>

#include "timeline_widget.h"

namespace podscope::viewer::app {
namespace {

auto Key(const SearchHit& h) {
  return std::make_tuple(h.start_ns, h.event.track, h.event.kind,
                         h.event.index);
}

}  // namespace

SearchBar::SearchBar(TimelineWidget* timeline, QWidget* parent)
    : QWidget(parent), timeline_(timeline) {
  setObjectName("search");
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->addWidget(new QLabel(tr("Find:")));
  edit_ = new QLineEdit;
  edit_->setObjectName("search.text");
  edit_->setPlaceholderText(
      tr("event name (Enter: next, Shift+Enter: previous)"));
  edit_->setClearButtonEnabled(true);
  edit_->setMinimumWidth(260);
  layout->addWidget(edit_, 1);
  regex_ = new QCheckBox(tr("Regex"));
  regex_->setObjectName("search.regex");
  layout->addWidget(regex_);
  case_ = new QCheckBox(tr("Match case"));
  case_->setObjectName("search.case");
  layout->addWidget(case_);
  prev_ = new QToolButton;
  prev_->setText(tr("◀ Previous"));
  prev_->setObjectName("search.previous");
  prev_->setToolTip(tr("Previous match (Shift+F3)"));
  layout->addWidget(prev_);
  next_ = new QToolButton;
  next_->setText(tr("Next ▶"));
  next_->setObjectName("search.next");
  next_->setToolTip(tr("Next match (F3)"));
  layout->addWidget(next_);
  status_ = new QLabel;
  status_->setObjectName("search.status");
  status_->setMinimumWidth(160);
  layout->addWidget(status_);

  connect(edit_, &QLineEdit::textChanged, this, &SearchBar::QueryChanged);
  connect(regex_, &QCheckBox::toggled, this, &SearchBar::QueryChanged);
  connect(case_, &QCheckBox::toggled, this, &SearchBar::QueryChanged);
  edit_->installEventFilter(this);
  connect(next_, &QToolButton::clicked, this, &SearchBar::Next);
  connect(prev_, &QToolButton::clicked, this, &SearchBar::Previous);
}

bool SearchBar::eventFilter(QObject* watched, QEvent* event) {
  if (watched == edit_ && event->type() == QEvent::KeyPress) {
    const auto* key = static_cast<QKeyEvent*>(event);
    if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
      if (key->modifiers() & Qt::ShiftModifier) {
        Previous();
      } else {
        Next();
      }
      return true;
    }
    if (key->key() == Qt::Key_Escape) {
      timeline_->setFocus(Qt::ShortcutFocusReason);
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

void SearchBar::SetStore(std::shared_ptr<const TraceStore> store) {
  store_ = std::move(store);
  dirty_ = true;
  current_.reset();
  counted_.clear();
  SetStatus(QString());
}

QString SearchBar::status_text() const { return status_->text(); }

void SearchBar::FocusField() {
  edit_->setFocus(Qt::ShortcutFocusReason);
  edit_->selectAll();
}

void SearchBar::QueryChanged() {
  dirty_ = true;
  current_.reset();
  SetStatus(QString());
}

void SearchBar::SetStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? "color: #b00020;" : "");
}

bool SearchBar::Prepare() {
  if (!store_) return false;
  if (edit_->text().isEmpty()) {
    SetStatus(tr("type a name to find"));
    return false;
  }
  if (!dirty_) return true;
  query_ = SearchQuery();
  query_.text = edit_->text().toStdString();
  query_.regex = regex_->isChecked();
  query_.case_sensitive = case_->isChecked();
  query_.limit = kCountLimit;
  auto hits = Search(*store_, query_);
  if (!hits.ok()) {
    SetStatus(
        tr("bad regex: %1")
            .arg(QString::fromStdString(std::string(hits.status().message()))),
        true);
    return false;
  }
  counted_ = std::move(*hits);
  dirty_ = false;
  current_.reset();
  if (counted_.empty()) {
    SetStatus(tr("no matches"), true);
    return false;
  }
  return true;
}

void SearchBar::Show(const SearchHit& hit, bool wrapped) {
  current_ = hit;
  auto it = std::lower_bound(
      counted_.begin(), counted_.end(), hit,
      [](const SearchHit& a, const SearchHit& b) { return Key(a) < Key(b); });
  const bool counted = it != counted_.end() && it->event == hit.event;
  const QString total = counted_.size() >= kCountLimit
                            ? QStringLiteral("%1+").arg(kCountLimit)
                            : QString::number(counted_.size());
  QString text = counted
                     ? tr("%1 of %2").arg(it - counted_.begin() + 1).arg(total)
                     : tr("beyond the first %1").arg(total);
  if (wrapped) text += tr(" (wrapped)");
  SetStatus(text);
  timeline_->Select(hit.event, /*reveal=*/true);
}

void SearchBar::Next() {
  if (!Prepare()) return;
  if (!current_) {
    // The first match in or after the window shown, else the first.
    SearchQuery q = query_;
    q.t0 = timeline_->axis().t0();
    q.limit = 1;
    auto first = Search(*store_, q);
    if (first.ok() && !first->empty()) {
      Show(first->front(), false);
    } else {
      Show(counted_.front(), true);
    }
    return;
  }
  auto step = SearchStep(*store_, query_, current_->event, true);
  if (step.ok() && *step) {
    Show(**step, false);
  } else {
    Show(counted_.front(), true);
  }
}

std::optional<SearchHit> SearchBar::LastHit() {
  if (counted_.size() < kCountLimit) return counted_.back();
  // More hits than counted: find a window ending at the trace's end that
  // holds some hits but fewer than the limit (growing it while empty,
  // bisecting once one was too full), and take its last.
  const int64_t first = store_->first_ns(), last = store_->last_ns();
  int64_t empty_width = 0;            // a width known to hold no hit
  std::optional<int64_t> full_width;  // a width known to hold too many
  int64_t width = std::max<int64_t>((last - first) / 4096, 1);
  for (int round = 0; round < 200; ++round) {
    SearchQuery q = query_;
    q.t0 = last - width;
    q.limit = kCountLimit;
    auto hits = Search(*store_, q);
    if (!hits.ok()) return std::nullopt;
    if (!hits->empty() && hits->size() < kCountLimit) return hits->back();
    if (hits->empty()) {
      if (q.t0 <= first) return std::nullopt;
      empty_width = width;
    } else {
      full_width = width;
      if (width - empty_width <= 1) {
        // Many hits within a nanosecond of each other: step to the end.
        SearchHit h = hits->back();
        for (auto next = SearchStep(*store_, query_, h.event, true);
             next.ok() && *next;
             next = SearchStep(*store_, query_, h.event, true)) {
          h = **next;
        }
        return h;
      }
    }
    width =
        full_width ? empty_width + (*full_width - empty_width) / 2 : width * 4;
  }
  return counted_.back();
}

void SearchBar::Previous() {
  if (!Prepare()) return;
  // From the hit shown, else from the selected event, else the last hit.
  std::optional<EventRef> from;
  if (current_) {
    from = current_->event;
  } else if (auto sel = timeline_->selected()) {
    from = *sel;
  }
  if (from) {
    auto step = SearchStep(*store_, query_, *from, false);
    if (step.ok() && *step) {
      Show(**step, false);
      return;
    }
  }
  if (auto last = LastHit()) Show(*last, current_.has_value());
}

}  // namespace podscope::viewer::app
