#include "time_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

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

namespace {

// `x` (>= 0) with three significant digits.
std::string ThreeDigits(double x) {
  char buf[64];
  const int decimals = x >= 99.95 ? 0 : x >= 9.995 ? 1 : x == 0 ? 0 : 2;
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

}  // namespace

std::string FormatValue(double v, std::string_view unit) {
  if (!std::isfinite(v)) return std::to_string(v);
  if (unit == "ns") return FormatDuration(static_cast<int64_t>(std::llround(v)));
  const std::string sign = v < 0 ? "-" : "";
  double x = std::fabs(v);
  if (unit == "bytes" || unit == "B") {
    static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (x >= 1023.5 && i < 4) {
      x /= 1024;
      ++i;
    }
    return sign + (i == 0 ? std::to_string(static_cast<int64_t>(std::llround(x)))
                          : ThreeDigits(x)) +
           " " + kNames[i];
  }
  std::string suffix;
  static constexpr const char* kSi[] = {"", "k", "M", "G", "T"};
  int i = 0;
  while (x >= 999.5 && i < 4) {
    x /= 1000;
    ++i;
  }
  suffix = kSi[i];
  std::string text = sign + (i == 0 && x == std::floor(x)
                                 ? std::to_string(static_cast<int64_t>(x))
                                 : ThreeDigits(x)) +
                     suffix;
  if (unit.empty()) return text;
  return text + " " + std::string(unit);
}

std::string FormatDuration(int64_t ns) {
  const bool negative = ns < 0;
  const long double v =
      negative ? -static_cast<long double>(ns) : static_cast<long double>(ns);
  char buf[64];
  const char* sign = negative ? "-" : "";
  if (v < 1000) {
    std::snprintf(buf, sizeof buf, "%s%lld ns", sign,
                  static_cast<long long>(v));
    return buf;
  }
  struct Unit {
    long double ns;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1e3L, "µs"}, {1e6L, "ms"}, {1e9L, "s"}};
  const Unit* unit = &kUnits[0];
  for (const Unit& u : kUnits) {
    if (v >= u.ns * 0.9995L) unit = &u;
  }
  const long double x = v / unit->ns;
  const int decimals = x >= 99.95L ? 0 : x >= 9.995L ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%s%.*Lf %s", sign, decimals, x, unit->name);
  return buf;
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
