#include "podscope/base/human_format.h"

#include <cmath>
#include <cstdio>
#include <iterator>

namespace podscope::base {
namespace {

struct Unit {
  const char* name;
  double scale;
};

// The largest unit in which `magnitude` (>= 1 in units[0]) is at least 1
// once rounded to three digits.
std::string Scaled(double magnitude, const Unit* units, size_t count) {
  size_t u = 0;
  while (u + 1 < count && magnitude / units[u + 1].scale >= 0.9995) ++u;
  return FormatThreeDigits(magnitude / units[u].scale) + " " + units[u].name;
}

}  // namespace

std::string FormatThreeDigits(double x) {
  char buf[64];
  const int decimals = x >= 99.95 ? 0 : x >= 9.995 ? 1 : x == 0 ? 0 : 2;
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string FormatDuration(int64_t ns) {
  static constexpr Unit kUnits[] = {
      {"ns", 1}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  const bool negative = ns < 0;
  // Unsigned magnitude: INT64_MIN needs no special case.
  const uint64_t magnitude =
      negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::string text = magnitude < 1000 ? std::to_string(magnitude) + " ns"
                                      : Scaled(static_cast<double>(magnitude),
                                               kUnits, std::size(kUnits));
  return negative ? "-" + text : text;
}

std::string FormatBytes(double bytes) {
  static constexpr Unit kUnits[] = {{"B", 1},
                                    {"KiB", 1024.0},
                                    {"MiB", 1024.0 * 1024},
                                    {"GiB", 1024.0 * 1024 * 1024},
                                    {"TiB", 1024.0 * 1024 * 1024 * 1024}};
  if (std::isnan(bytes)) return "nan B";
  const double magnitude = std::fabs(bytes);
  const bool negative = bytes < 0 && magnitude >= 0.5;  // never "-0 B"
  std::string text;
  if (magnitude < 1023.5) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f B", std::round(magnitude));
    text = buf;
  } else if (std::isinf(magnitude)) {
    text = "inf B";
  } else {
    text = Scaled(magnitude, kUnits, std::size(kUnits));
  }
  return negative ? "-" + text : text;
}

std::string FormatCount(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace podscope::base
