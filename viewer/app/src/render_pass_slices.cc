// slices: a track's slice boxes, lane by depth, and which names fit. A
// box narrower than a pixel stands for every slice of its depth there, so
// each of its pixels is shaded by how busy the depth is in it (lod.h's
// QueryBusy): a thread busy 1 % of the time is a faint tint, one busy all
// the time the name's full colour.
#include <algorithm>
#include <cmath>
#include <span>

#include "name_colors.h"
#include "render_passes.h"

namespace podscope::viewer::app::render {
namespace {

// A representative box's pixels are shaded this many at a time.
constexpr int kMaxShadedRun = 64;

}  // namespace

QRgb BusyShade(QRgb color, float busy) {
  const float share = std::clamp(busy, 0.0f, 1.0f);
  const float a = kMinBusyShade + (1.0f - kMinBusyShade) * share;
  auto mix = [a](int c, int b) {
    // lround of a value in [0, 256), without the call: there adding 0.5 in
    // float is exact (or reaches the next power of two, which truncates
    // the same), so truncating rounds half away from zero as lround does.
    return static_cast<int>(c * a + b * (1.0f - a) + 0.5f);
  };
  constexpr QRgb bg = kBackgroundRgb;
  return qRgb(mix(qRed(color), qRed(bg)), mix(qGreen(color), qGreen(bg)),
              mix(qBlue(color), qBlue(bg)));
}

void PaintSlices(const Frame& f, const LayoutRow& row, const TrackQuery& q,
                 StoreCache& cache, Canvas* canvas, TrackOut* out) {
  if (row.slice_top < 0) return;
  const TimelineState& s = *f.s;
  // Plot coordinates: the canvas' origin is the plot's top left.
  const int row_y = row.y - s.scroll_y;
  const double scale = f.plot.width() / static_cast<double>(s.axis.span());
  const int64_t t0 = s.axis.t0();
  const int right = f.plot.width();
  const int lane_h = row.lane_height;
  for (const VisibleSlice& v : q.slices) {
    // A compact row shows its first levels only.
    if (v.depth >= row.depths) continue;
    const int lane_y =
        row_y + row.slice_top + static_cast<int>(v.depth) * lane_h;
    if (lane_y + lane_h < 0 || lane_y > f.plot.height()) {
      continue;
    }
    const double x0 = Since(v.start_ns, t0) * scale;
    const double x1 = x0 + static_cast<double>(v.duration_ns) * scale;
    int ix0 = static_cast<int>(std::floor(std::max(x0, -2.0)));
    int ix1 = static_cast<int>(std::floor(std::min(x1, right + 2.0)));
    if (ix1 <= ix0) ix1 = ix0 + 1;
    int w = ix1 - ix0;
    if (w >= 4) --w;  // a gap between neighbours
    const QRgb color = cache.Rgb(v.name);
    ++out->boxes;
    const std::vector<float>* busy = v.representative && v.depth < q.busy.size()
                                         ? &q.busy[v.depth]
                                         : nullptr;
    if (busy != nullptr && !busy->empty()) {
      // Each pixel shaded by its own share, the box written row by row.
      const int first = std::max(ix0, 0);
      const int last = std::min(ix0 + w, right);
      QRgb shades[kMaxShadedRun];
      for (int x = first; x < last; x += kMaxShadedRun) {
        const int n = std::min(last - x, kMaxShadedRun);
        for (int i = 0; i < n; ++i) {
          shades[i] = BusyShade(color, (*busy)[static_cast<size_t>(x + i)]);
        }
        canvas->FillRow(x, lane_y, lane_h - 1,
                        std::span<const QRgb>(shades, static_cast<size_t>(n)));
      }
      continue;  // narrower than a pixel: no room for a name
    }
    canvas->Fill(ix0, lane_y, w, lane_h - 1, color);
    // Names need a full lane's height.
    if (w < kMinTextBoxWidth || lane_h < TrackLayout::kLaneHeight) continue;
    // The label stays in view when the box starts left of the window.
    const int vis0 = std::max(ix0, 0);
    const int vis1 = std::min(ix0 + w, right);
    const double room = vis1 - vis0 - 6;
    if (room < 12) continue;
    out->pending.push_back({v.name, vis0, lane_y, room,
                            PrefersLightText(color & 0xFFFFFF)
                                ? qRgb(255, 255, 255)
                                : kText.rgb()});
  }
}

}  // namespace podscope::viewer::app::render
