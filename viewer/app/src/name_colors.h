// Stable colours for event names: the same name gets the same colour in
// every run, every window and every screenshot, so a user learns them.
#ifndef PODSCOPE_VIEWER_APP_NAME_COLORS_H_
#define PODSCOPE_VIEWER_APP_NAME_COLORS_H_

#include <cstdint>
#include <string_view>

namespace podscope::viewer::app {

// 0xRRGGBB for a name: a hash of its bytes picks the hue, saturation and
// value within a band that keeps dark text readable on it.
uint32_t NameColorRgb(std::string_view name);

// True when white text reads better than black on `rgb`.
bool PrefersLightText(uint32_t rgb);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_NAME_COLORS_H_
