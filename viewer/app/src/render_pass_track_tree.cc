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
  const QFontMetricsF metrics(fonts.normal);
  const QFontMetricsF bold_metrics(fonts.bold);
  const auto& rows = s.layout->rows();
  for (int r = f.first_row; r < f.last_row; ++r) {
    const LayoutRow& row = rows[r];
    const int y = labels.y() + row.y - s.scroll_y;
    const int indent = 6 + row.level * 12;
    QColor bg = row.kind == RowKind::kHost      ? kHostRow
                : row.kind == RowKind::kProcess ? kProcessRow
                                                : kGutter;
    p.fillRect(labels.x(), y, labels.width(), row.height, bg);
    p.fillRect(labels.x(), y + row.height - 1, labels.width(), 1, kSeparator);
    const int text_y = y + std::min(row.height, TrackLayout::kHostHeight) / 2;
    QString text, note;
    QColor note_color = kDimText;
    if (row.kind != RowKind::kTrack) {
      Disclosure(p, labels.x() + indent + 4, text_y, row.collapsed);
    }
    int x = labels.x() + indent + (row.kind == RowKind::kTrack ? 0 : 14);
    if (row.kind == RowKind::kHost) {
      const HostInfo& h = s.store->hosts()[row.host];
      text = QString::fromStdString(h.name.empty() ? "(unnamed host)" : h.name);
      size_t tracks = 0;
      uint64_t not_loaded = 0;
      for (ProcessId pid : h.processes) {
        const ProcessInfo& info = s.store->processes()[pid];
        tracks += info.tracks.size();
        if (!info.detail) not_loaded += info.events;
      }
      note = QStringLiteral("%1 process%2 · %3 tracks")
                 .arg(h.processes.size())
                 .arg(h.processes.size() == 1 ? "" : "es")
                 .arg(tracks);
      if (not_loaded > 0) {
        // An overview host: its events load when it is expanded.
        note = QStringLiteral("%1 process%2 · %3 events to load")
                   .arg(h.processes.size())
                   .arg(h.processes.size() == 1 ? "" : "es")
                   .arg(not_loaded);
      }
      for (ProcessId pid : h.processes) {
        if (cache.ProcessDamaged(pid)) {
          note = QStringLiteral("⚠ damaged file");
          note_color = kWarning;
        }
      }
      p.setFont(fonts.bold);
      p.setPen(kText);
      const QString shown =
          bold_metrics.elidedText(text, Qt::ElideRight, labels.right() - x - 4);
      p.drawText(QPointF(x, text_y + bold_metrics.ascent() / 2 - 1), shown);
      x += static_cast<int>(bold_metrics.horizontalAdvance(shown)) + 8;
      p.setFont(fonts.normal);
    } else if (row.kind == RowKind::kProcess) {
      const ProcessInfo& proc = s.store->processes()[row.process];
      text = ProcessLabel(proc);
      if (cache.ProcessDamaged(row.process)) {
        note = QStringLiteral("⚠ partial");
        note_color = kWarning;
      } else if (!proc.clock_aligned && s.store->processes().size() > 1) {
        note = QStringLiteral("own clock");
        note_color = kWarning;
      }
      const double note_w =
          note.isEmpty() ? 0 : metrics.horizontalAdvance(note) + 8;
      const QString shown =
          metrics.elidedText(text, Qt::ElideRight,
                             std::max(40.0, labels.right() - x - 4 - note_w));
      p.setPen(kText);
      p.drawText(QPointF(x, text_y + metrics.ascent() / 2 - 1), shown);
      x += static_cast<int>(metrics.horizontalAdvance(shown)) + 8;
    } else {
      const TrackInfo& t = s.store->tracks()[row.track];
      text = QString::fromStdString(t.name);
      if (t.kind == proto::TRACK_KIND_DEVICE_STREAM) {
        note = QStringLiteral("device %1").arg(t.device_id);
      } else if (t.kind == proto::TRACK_KIND_COUNTER && !t.unit.empty()) {
        note = QString::fromStdString(t.unit);
      }
      if (t.dropped > 0) {
        note = QStringLiteral("⚠ %1 dropped").arg(t.dropped);
        note_color = kWarning;
      }
      const double note_w =
          note.isEmpty() ? 0 : metrics.horizontalAdvance(note) + 8;
      const double room = std::max(20.0, labels.right() - x - 6 - note_w);
      const QString shown = metrics.elidedText(text, Qt::ElideRight, room);
      p.setPen(kText);
      const int ty = y + std::min(row.height, 2 * TrackLayout::kLaneHeight) / 2;
      p.drawText(QPointF(x, ty + metrics.ascent() / 2 - 1), shown);
      x += static_cast<int>(metrics.horizontalAdvance(shown)) + 8;
      if (!note.isEmpty()) {
        p.setFont(fonts.small);
        p.setPen(note_color);
        p.drawText(QPointF(x, ty + metrics.ascent() / 2 - 1), note);
        p.setFont(fonts.normal);
      }
      continue;
    }
    if (!note.isEmpty()) {
      p.setFont(fonts.small);
      p.setPen(note_color);
      p.drawText(QPointF(x, text_y + metrics.ascent() / 2 - 1),
                 QFontMetricsF(fonts.small)
                     .elidedText(note, Qt::ElideRight, labels.right() - x - 4));
      p.setFont(fonts.normal);
    }
  }
  p.setClipping(false);
  p.fillRect(labels.right(), labels.y(), 1, labels.height(), kSeparator);
}

}  // namespace podscope::viewer::app::render
