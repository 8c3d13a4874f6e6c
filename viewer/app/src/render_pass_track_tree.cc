// track tree: the host / process / track column left of the plot.
#include <QFontMetricsF>
#include <QStringList>
#include <algorithm>
#include <string>

#include "render_passes.h"

namespace podscope::viewer::app::render {
namespace {

namespace proto = trace_format::proto;

void Disclosure(QPainter& p, double cx, double cy, bool collapsed) {
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setPen(Qt::NoPen);
  p.setBrush(kDimText);
  QPolygonF tri;
  if (collapsed) {
    tri << QPointF(cx - 3, cy - 5) << QPointF(cx + 4, cy)
        << QPointF(cx - 3, cy + 5);
  } else {
    tri << QPointF(cx - 5, cy - 3) << QPointF(cx + 5, cy - 3)
        << QPointF(cx, cy + 4);
  }
  p.drawPolygon(tri);
  p.setBrush(Qt::NoBrush);
  p.setRenderHint(QPainter::Antialiasing, false);
}

// A note right of a row's name: counts, a device, a warning.
struct Note {
  QString text;
  QColor color = kDimText;
};

Note HostNote(const TraceStore& store, const HostInfo& h,
              const StoreCache& cache) {
  size_t tracks = 0;
  uint64_t not_loaded = 0;
  for (ProcessId pid : h.processes) {
    const ProcessInfo& info = store.processes()[pid];
    tracks += info.tracks.size();
    if (!info.detail) not_loaded += info.events;
  }
  Note note;
  note.text = QStringLiteral("%1 process%2 · %3 tracks")
                  .arg(h.processes.size())
                  .arg(h.processes.size() == 1 ? "" : "es")
                  .arg(tracks);
  if (not_loaded > 0) {
    // An overview host: its events load when it is expanded.
    note.text = QStringLiteral("%1 process%2 · %3 events to load")
                    .arg(h.processes.size())
                    .arg(h.processes.size() == 1 ? "" : "es")
                    .arg(not_loaded);
  }
  for (ProcessId pid : h.processes) {
    if (cache.ProcessDamaged(pid)) {
      note = Note{QStringLiteral("⚠ damaged file"), kWarning};
    }
  }
  return note;
}

Note ProcessNote(const TraceStore& store, ProcessId process,
                 const StoreCache& cache) {
  if (cache.ProcessDamaged(process)) {
    return Note{QStringLiteral("⚠ partial"), kWarning};
  }
  if (!store.processes()[process].clock_aligned &&
      store.processes().size() > 1) {
    return Note{QStringLiteral("own clock"), kWarning};
  }
  return Note{};
}

Note TrackNote(const TrackInfo& t) {
  Note note;
  if (t.kind == proto::TRACK_KIND_DEVICE_STREAM) {
    note.text = QStringLiteral("device %1").arg(t.device_id);
  } else if (t.kind == proto::TRACK_KIND_COUNTER && !t.unit.empty()) {
    note.text = QString::fromStdString(t.unit);
  }
  if (t.dropped > 0) {
    note = Note{QStringLiteral("⚠ %1 dropped").arg(t.dropped), kWarning};
  }
  return note;
}

// Paints the rows' labels into the column left of the plot.
class TrackTreePainter {
 public:
  TrackTreePainter(QPainter& p, const Fonts& fonts, const TraceStore& store,
                   const StoreCache& cache, const QRect& labels)
      : p_(p),
        fonts_(fonts),
        store_(store),
        cache_(cache),
        labels_(labels),
        metrics_(fonts.normal),
        bold_metrics_(fonts.bold) {}

  // `y`: the row's top.
  void PaintRow(const LayoutRow& row, int y) {
    const int indent = 6 + row.level * 12;
    QColor bg = row.kind == RowKind::kHost    ? kHostRow
                : row.kind == RowKind::kTrack ? kGutter
                                              : kProcessRow;
    p_.fillRect(labels_.x(), y, labels_.width(), row.height, bg);
    p_.fillRect(labels_.x(), y + row.height - 1, labels_.width(), 1,
                kSeparator);
    if (row.kind == RowKind::kTrack) {
      // Compact rows are lower than the text: each keeps to its own.
      p_.save();
      p_.setClipRect(QRect(labels_.x(), y, labels_.width(), row.height),
                     Qt::IntersectClip);
      PaintTrack(row, y, labels_.x() + indent);
      p_.restore();
      return;
    }
    const int text_y = y + std::min(row.height, TrackLayout::kHostHeight) / 2;
    Disclosure(p_, labels_.x() + indent + 4, text_y, row.collapsed);
    const int x = labels_.x() + indent + 14;
    if (row.kind == RowKind::kHost) {
      PaintHost(row, x, text_y);
    } else if (row.kind == RowKind::kCounters) {
      PaintCounters(row, x, text_y);
    } else {
      PaintProcess(row, x, text_y);
    }
  }

 private:
  // The host's name in bold, then its processes and tracks.
  void PaintHost(const LayoutRow& row, int x, int text_y) {
    const HostInfo& h = store_.hosts()[row.host];
    const QString text =
        QString::fromStdString(h.name.empty() ? "(unnamed host)" : h.name);
    p_.setFont(fonts_.bold);
    p_.setPen(kText);
    const QString shown =
        bold_metrics_.elidedText(text, Qt::ElideRight, labels_.right() - x - 4);
    p_.drawText(QPointF(x, text_y + bold_metrics_.ascent() / 2 - 1), shown);
    x += static_cast<int>(bold_metrics_.horizontalAdvance(shown)) + 8;
    p_.setFont(fonts_.normal);
    PaintNote(HostNote(store_, h, cache_), x, text_y);
  }

  // "counters" and how many, then their names.
  void PaintCounters(const LayoutRow& row, int x, int text_y) {
    const QString text = QStringLiteral("counters (%1)").arg(row.depths);
    p_.setPen(kText);
    p_.drawText(QPointF(x, text_y + metrics_.ascent() / 2 - 1), text);
    x += static_cast<int>(metrics_.horizontalAdvance(text)) + 8;
    if (!row.collapsed) return;
    QStringList names;
    for (TrackId t : store_.processes()[row.process].tracks) {
      const TrackInfo& info = store_.tracks()[t];
      if (info.kind == proto::TRACK_KIND_COUNTER) {
        names << QString::fromStdString(info.name);
      }
    }
    PaintNote(Note{names.join(QStringLiteral(", "))}, x, text_y);
  }

  // The process's label, shortened to leave its note room.
  void PaintProcess(const LayoutRow& row, int x, int text_y) {
    const QString text = ProcessLabel(store_.processes()[row.process]);
    const Note note = ProcessNote(store_, row.process, cache_);
    const double note_w =
        note.text.isEmpty() ? 0 : metrics_.horizontalAdvance(note.text) + 8;
    const QString shown = metrics_.elidedText(
        text, Qt::ElideRight, std::max(40.0, labels_.right() - x - 4 - note_w));
    p_.setPen(kText);
    p_.drawText(QPointF(x, text_y + metrics_.ascent() / 2 - 1), shown);
    x += static_cast<int>(metrics_.horizontalAdvance(shown)) + 8;
    PaintNote(note, x, text_y);
  }

  // The track's name, shortened to leave its note room, centred on its
  // first two lanes.
  void PaintTrack(const LayoutRow& row, int y, int x) {
    const TrackInfo& t = store_.tracks()[row.track];
    const QString text = QString::fromStdString(t.name);
    Note note = TrackNote(t);
    if (row.depths < row.all_depths) {
      // Its first levels only: a click on the name shows the others.
      note.text = QStringLiteral("+%1 levels").arg(row.all_depths - row.depths);
    }
    const double note_w =
        note.text.isEmpty() ? 0 : metrics_.horizontalAdvance(note.text) + 8;
    const double room = std::max(20.0, labels_.right() - x - 6 - note_w);
    // A row lower than the text (compact rows) has its name in small type.
    const bool tight = row.height < metrics_.height() + 2;
    const QFontMetricsF small(fonts_.small);
    const QFontMetricsF& m = tight ? small : metrics_;
    const QString shown = m.elidedText(text, Qt::ElideRight, room);
    p_.setFont(tight ? fonts_.small : fonts_.normal);
    p_.setPen(kText);
    const int ty = y + std::min(row.height, 2 * TrackLayout::kLaneHeight) / 2;
    p_.drawText(QPointF(x, ty + m.ascent() / 2 - 1), shown);
    p_.setFont(fonts_.normal);
    x += static_cast<int>(m.horizontalAdvance(shown)) + 8;
    if (!note.text.isEmpty()) {
      p_.setFont(fonts_.small);
      p_.setPen(note.color);
      p_.drawText(QPointF(x, ty + metrics_.ascent() / 2 - 1), note.text);
      p_.setFont(fonts_.normal);
    }
  }

  void PaintNote(const Note& note, int x, int text_y) {
    if (note.text.isEmpty()) return;
    p_.setFont(fonts_.small);
    p_.setPen(note.color);
    p_.drawText(
        QPointF(x, text_y + metrics_.ascent() / 2 - 1),
        QFontMetricsF(fonts_.small)
            .elidedText(note.text, Qt::ElideRight, labels_.right() - x - 4));
    p_.setFont(fonts_.normal);
  }

  QPainter& p_;
  const Fonts& fonts_;
  const TraceStore& store_;
  const StoreCache& cache_;
  const QRect labels_;
  const QFontMetricsF metrics_;
  const QFontMetricsF bold_metrics_;
};

}  // namespace

QString ProgramName(const ProcessInfo& proc) {
  const auto& args = proc.metadata.command_line();
  if (args.empty() || args[0].empty()) return {};
  auto base_name = [](const std::string& path) {
    const size_t slash = path.find_last_of('/');
    const std::string name =
        slash == std::string::npos ? path : path.substr(slash + 1);
    return QString::fromUtf8(name.data(), static_cast<int>(name.size()));
  };
  QString name = base_name(args[0]);
  // An interpreter's program is its script.
  if (name.startsWith(QStringLiteral("python")) && args.size() > 1 &&
      !args[1].empty() && args[1][0] != '-') {
    name += QStringLiteral(" ") + base_name(args[1]);
  }
  return name;
}

QString ProcessLabel(const ProcessInfo& proc) {
  QStringList parts;
  const QString program = ProgramName(proc);
  if (!program.isEmpty()) parts << program;
  if (proc.process_index >= 0) {
    QString rank = QStringLiteral("rank %1").arg(proc.process_index);
    if (proc.process_count > 0) {
      rank += QStringLiteral("/%1").arg(proc.process_count);
    }
    parts << rank;
  }
  parts << QStringLiteral("pid %1").arg(proc.pid);
  return parts.join(QStringLiteral(" · "));
}

void PaintTrackTree(QPainter& p, const Frame& f, const Fonts& fonts,
                    const StoreCache& cache) {
  const TimelineState& s = *f.s;
  const QRect labels = LabelRect(f.area);
  p.fillRect(labels, kGutter);
  p.setClipRect(labels);
  p.setFont(fonts.normal);
  TrackTreePainter tree(p, fonts, *s.store, cache, labels);
  const auto& rows = s.layout->rows();
  for (int r = f.first_row; r < f.last_row; ++r) {
    tree.PaintRow(rows[r], labels.y() + rows[r].y - s.scroll_y);
  }
  p.setClipping(false);
  p.fillRect(labels.right(), labels.y(), 1, labels.height(), kSeparator);
}

}  // namespace podscope::viewer::app::render
