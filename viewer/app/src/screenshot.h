// podscope-viewer --screenshot: open a trace in the real main window,
// render it to an image and exit.
#ifndef PODSCOPE_VIEWER_APP_SCREENSHOT_H_
#define PODSCOPE_VIEWER_APP_SCREENSHOT_H_

#include <optional>

#include "cli_options.h"

namespace podscope::viewer::app {

class MainWindow;

// Applies --range to a window whose trace is loaded: offsets from the
// trace's first event.
void ApplyRange(MainWindow& window, const TimeRangeSpec& range);

// Needs a QApplication. Returns the process exit status (0 written, 1 the
// trace could not be opened or the image not written). With `verbose`,
// prints where the timeline is in the image:
//   timeline.plot X Y W H        the plot (time runs left to right), pixels
//   timeline.window T0 T1        the window shown, ns on the trace's clock
//   timeline.origin T            the trace's first event, ns
//   track ID TOP LANE_HEIGHT DEPTHS PATH   a shown track's first slice
//                                lane (TOP in image pixels)
int RunScreenshot(const CliOptions& options);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_SCREENSHOT_H_
