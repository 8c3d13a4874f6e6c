#include "time_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "podscope/base/human_format.h"

namespace podscope::viewer::app {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

std::string FormatValue(double v, std::string_view unit) {
  if (!std::isfinite(v)) return std::to_string(v);
  if (unit == "ns")
    return FormatDuration(static_cast<int64_t>(std::llround(v)));
  if (unit == "bytes" || unit == "B") return base::FormatBytes(v);
  const std::string sign = v < 0 ? "-" : "";
  double x = std::fabs(v);
  static constexpr const char* kSi[] = {"", "k", "M", "G", "T"};
  int i = 0;
  while (x >= 999.5 && i < 4) {
    x /= 1000;
    ++i;
  }
  std::string text =
      sign +
      (i == 0 && x == std::floor(x) ? std::to_string(static_cast<int64_t>(x))
                                    : base::FormatThreeDigits(x)) +
      kSi[i];
  if (unit.empty()) return text;
  return text + " " + std::string(unit);
}

std::optional<int64_t> ParseDuration(std::string_view text,
                                     std::string* error) {
  const std::string_view t = Trim(text);
  size_t digits = 0;
  bool dot = false;
  while (digits < t.size() && ((t[digits] >= '0' && t[digits] <= '9') ||
                               (t[digits] == '.' && !dot))) {
    dot |= t[digits] == '.';
    ++digits;
  }
  const std::string number(t.substr(0, digits));
  const std::string_view unit = Trim(t.substr(digits));
  if (number.empty() || number == ".") {
    *error = "'" + std::string(text) +
             "' is not a time (expected a number with ns, us, ms or s)";
    return std::nullopt;
  }
  const long double value = std::strtold(number.c_str(), nullptr);
  long double scale;
  if (unit == "ns") {
    scale = 1;
  } else if (unit == "us" || unit == "µs") {
    scale = 1e3L;
  } else if (unit == "ms") {
    scale = 1e6L;
  } else if (unit == "s") {
    scale = 1e9L;
  } else if (unit.empty() && value == 0) {
    scale = 1;
  } else if (unit.empty()) {
    *error = "'" + std::string(text) + "' needs a unit: ns, us, ms or s";
    return std::nullopt;
  } else {
    *error = "'" + std::string(text) + "': unknown unit '" + std::string(unit) +
             "' (use ns, us, ms or s)";
    return std::nullopt;
  }
  const long double ns = std::round(value * scale);
  if (ns > static_cast<long double>(std::numeric_limits<int64_t>::max() / 2)) {
    *error = "'" + std::string(text) + "' is too large";
    return std::nullopt;
  }
  return static_cast<int64_t>(ns);
}

std::optional<TimeRangeSpec> ParseRange(std::string_view text,
                                        std::string* error) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    *error = "'" + std::string(text) +
             "' is not a range (expected T0:T1, e.g. 10ms:25ms)";
    return std::nullopt;
  }
  TimeRangeSpec r;
  const std::string_view a = Trim(text.substr(0, colon));
  const std::string_view b = Trim(text.substr(colon + 1));
  if (!a.empty()) {
    r.t0 = ParseDuration(a, error);
    if (!r.t0) return std::nullopt;
  }
  if (!b.empty()) {
    r.t1 = ParseDuration(b, error);
    if (!r.t1) return std::nullopt;
  }
  if (r.t0 && r.t1 && *r.t1 <= *r.t0) {
    *error = "'" + std::string(text) + "': the end must be after the start";
    return std::nullopt;
  }
  return r;
}

}  // namespace podscope::viewer::app
