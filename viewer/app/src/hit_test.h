// Which event is under a point of the timeline, and what surrounds an
// event: answered from viewer/core's columns with the same pixel grid the
// level-of-detail query draws with, so a click selects what is drawn there.
#ifndef PODSCOPE_VIEWER_APP_HIT_TEST_H_
#define PODSCOPE_VIEWER_APP_HIT_TEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::app {

// The slice of `depth` drawn at x (pixels from the window's left, the
// window [t0, t1) drawn `pixels` wide): the longest slice touching pixel x,
// else the longest within `tolerance_px` pixels of it.
std::optional<EventRef> HitSlice(const TraceStore& store, TrackId track,
                                 uint32_t depth, int64_t t0, int64_t t1,
                                 uint32_t pixels, double x,
                                 int tolerance_px = 2);
// The instant nearest x within `tolerance_px`.
std::optional<EventRef> HitInstant(const TraceStore& store, TrackId track,
                                   int64_t t0, int64_t t1, uint32_t pixels,
                                   double x, int tolerance_px = 3);

// The depth a slice is drawn at (0 for instants).
uint32_t DepthOf(const TraceStore& store, const EventRef& event);
// The slices enclosing an event on its track, outermost first. Empty on a
// track laid out in lanes (its depths are not nesting).
std::vector<EventRef> EnclosingSlices(const TraceStore& store,
                                      const EventRef& event);
// "host › pid 12 (process 0) › worker 1".
std::string TrackPath(const TraceStore& store, TrackId track);
// The user scope a name carries, as the runtime names device ops
// "<scope>/<op>": the part before the last '/', or empty.
std::string_view ScopeOfName(std::string_view name);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_HIT_TEST_H_
