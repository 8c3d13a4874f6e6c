// The timeline's render passes, in the order TimelineRenderer::Paint runs
// them. Each has one job and reads only its arguments (the frame, the
// track's query results, the per-store caches); what it produces goes to
// the canvas, its output struct or the painter. Each is defined in its own
// render_pass_*.cc.
//
//   rows        row backgrounds and the time grid; row separators
//   overview    host rows of a big session before their events load
//   summary     collapsed host and process rows: how busy they were
//   slices      a track's slice boxes (shaded by how busy each pixel is
//               when zoomed out) and the names that fit
//   marks       a track's instants and CPU samples
//   counters    a counter track's value band and line
//   text        slice names measured, elided and drawn; counter lines
//   steps       each rank's step windows on its process row
//   doctor      a job doctor's marks on the ranks' rows
//   highlight   hover and selection outlines, cursor line, time range
//   flows       the selected event's flows as arrows
//   track tree  the host / process / track column left of the plot
//   axis        the ruler, range duration, cursor time, window span
//
// The track passes (slices, marks, counters) run on several threads, one
// track at a time, each track writing only its own rows of the canvas.
#ifndef PODSCOPE_VIEWER_APP_RENDER_PASSES_H_
#define PODSCOPE_VIEWER_APP_RENDER_PASSES_H_

#include <QPainter>
#include <vector>

#include "render_context.h"

namespace podscope::viewer::app::render {

// rows: header rows' backgrounds and the ruler's grid lines (plot
// coordinates), before the tracks.
void PaintRowBackgrounds(const Frame& f, Canvas* canvas);
// overview: host rows of an overview store whose events are not loaded:
// busy shade per pixel (BusyShade of kOverviewBusy) and step ticks.
void PaintOverviewRows(const Frame& f, Canvas* canvas);
// summary: a collapsed host or process row of loaded events: each pixel
// shaded by how busy the busiest thread or device stream under it was.
void PaintCollapsedRows(const Frame& f, Canvas* canvas);
// steps: each rank's step windows as bands behind its process row, with
// "step N" where there is room; a collapsed host shows its first rank's.
void PaintStepBands(QPainter& p, const Frame& f, const Fonts& fonts);
// doctor: each job doctor mark as a band on its rank's process row (its
// host's row when that is collapsed) with its label where there is room,
// and outlined over its thread's row when that is shown.
void PaintDoctorMarks(QPainter& p, const Frame& f, const Fonts& fonts);
// rows: the line under each row, over the tracks.
void PaintRowSeparators(const Frame& f, Canvas* canvas);

// slices: the boxes of `q.slices` in the row's slice lanes. A
// representative (sub-pixel) box's pixels are shaded by q.busy of its
// depth (BusyShade); boxes at least kMinTextBoxWidth wide with room for
// text add a PendingLabel.
void PaintSlices(const Frame& f, const LayoutRow& row, const TrackQuery& q,
                 StoreCache& cache, Canvas* canvas, TrackOut* out);

// slices: `color` over the background for a pixel `busy` (0..1) of its
// time: kMinBusyShade of the colour for a trace of work, all of it when
// busy throughout.
inline constexpr float kMinBusyShade = 0.15f;
QRgb BusyShade(QRgb color, float busy);

// marks: instants (the first of each pixel) and CPU samples (one tick per
// occupied pixel).
void PaintInstants(const Frame& f, const LayoutRow& row, const TrackQuery& q,
                   StoreCache& cache, Canvas* canvas, TrackOut* out);
void PaintSamples(const Frame& f, const LayoutRow& row, Canvas* canvas,
                  TrackOut* out);

// counters: the band of values within each pixel into the canvas, the
// line (widget coordinates) and the scale's label into `out`.
void PaintCounter(const Frame& f, const LayoutRow& row, const TrackQuery& q,
                  StoreCache& cache, Canvas* canvas, TrackOut* out);

// text: every track's labels in track order: its pending slice names
// measured and elided (dropped when a character or less would remain),
// then its other labels. `*slice_labels` is how many slice names remain.
std::vector<Label> ResolveLabels(const Frame& f,
                                 const std::vector<TrackOut>& outs,
                                 const Fonts& fonts, StoreCache& cache,
                                 size_t* slice_labels);
// text: labels and counter lines over the plot.
void DrawTexts(QPainter& p, const Frame& f, const std::vector<Label>& labels,
               const std::vector<TrackOut>& outs);

// highlight: the hovered event's thin outline, the selected event's strong
// one (flows in between, see below), the cursor line; then the range.
void PaintHover(QPainter& p, const Frame& f);
void PaintSelection(QPainter& p, const Frame& f);
void PaintCursor(QPainter& p, const Frame& f);
void PaintRange(QPainter& p, const Frame& f);

// flows: arrows from cause to effect between the selected event and the
// other ends of its flows.
void PaintFlows(QPainter& p, const Frame& f);

// track tree: the column of host, process and track names.
void PaintTrackTree(QPainter& p, const Frame& f, const Fonts& fonts,
                    const StoreCache& cache);
// track tree: a process row's text, "program · rank i/n · pid p": the
// program's name (the file's command line's first word without its
// folder, with the script for a python interpreter) and its rank (process
// index, of the process count when known), each when the file says.
QString ProcessLabel(const ProcessInfo& proc);

// axis: the ruler's ticks and labels, the selected range's duration, the
// cursor's time and the window's span.
void PaintAxis(QPainter& p, const Frame& f, const Fonts& fonts);

// Everything but the plot's content when there is nothing to show.
void PaintEmpty(QPainter& p, const QRect& area, const TimelineState& s,
                const Fonts& fonts);

}  // namespace podscope::viewer::app::render

#endif  // PODSCOPE_VIEWER_APP_RENDER_PASSES_H_
