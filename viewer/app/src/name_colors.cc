#include "name_colors.h"

#include <cmath>

namespace podscope::viewer::app {
namespace {

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // Mix the high bits down: short names differ mostly in the low ones.
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return h;
}

uint32_t HsvToRgb(double h, double s, double v) {
  const double c = v * s;
  const double hp = h / 60.0;
  const double x = c * (1 - std::fabs(std::fmod(hp, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) {
    r = c, g = x;
  } else if (hp < 2) {
    r = x, g = c;
  } else if (hp < 3) {
    g = c, b = x;
  } else if (hp < 4) {
    g = x, b = c;
  } else if (hp < 5) {
    r = x, b = c;
  } else {
    r = c, b = x;
  }
  const double m = v - c;
  auto channel = [m](double u) {
    const long value = std::lround((u + m) * 255.0);
    return static_cast<uint32_t>(value < 0 ? 0 : value > 255 ? 255 : value);
  };
  return (channel(r) << 16) | (channel(g) << 8) | channel(b);
}

}  // namespace

uint32_t NameColorRgb(std::string_view name) {
  const uint64_t h = Fnv1a(name);
  const double hue = static_cast<double>(h % 360);
  const double saturation = 0.35 + static_cast<double>((h >> 16) % 25) / 100.0;
  const double value = 0.80 + static_cast<double>((h >> 32) % 15) / 100.0;
  return HsvToRgb(hue, saturation, value);
}

bool PrefersLightText(uint32_t rgb) {
  const double r = (rgb >> 16) & 0xFF, g = (rgb >> 8) & 0xFF, b = rgb & 0xFF;
  return 0.299 * r + 0.587 * g + 0.114 * b < 120.0;
}

}  // namespace podscope::viewer::app
