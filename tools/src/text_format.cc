#include "text_format.h"

#include <cmath>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace podscope::tools {
namespace {

// `value` (>= 1) with three significant digits.
std::string ThreeDigits(double value) {
  if (value < 10) return absl::StrFormat("%.2f", value);
  if (value < 100) return absl::StrFormat("%.1f", value);
  return absl::StrFormat("%.0f", value);
}

struct Unit {
  const char* name;
  double scale;
};

// Picks the largest unit in which `magnitude` is at least 1 once rounded to
// three digits ("999.96 µs" reads "1.00 ms", not "1000 µs").
std::string Scaled(double magnitude, const Unit* units, size_t count) {
  size_t u = 0;
  while (u + 1 < count && magnitude / units[u + 1].scale >= 0.9995) ++u;
  return absl::StrCat(ThreeDigits(magnitude / units[u].scale), " ",
                      units[u].name);
}

}  // namespace

std::string FormatDuration(int64_t ns) {
  static constexpr Unit kUnits[] = {
      {"ns", 1}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  const bool negative = ns < 0;
  // Work in double so that INT64_MIN needs no special case.
  const double magnitude = std::fabs(static_cast<double>(ns));
  std::string text = magnitude < 1000
                         ? absl::StrCat(static_cast<int64_t>(magnitude), " ns")
                         : Scaled(magnitude, kUnits, std::size(kUnits));
  return negative ? absl::StrCat("-", text) : text;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr Unit kUnits[] = {{"B", 1},
                                    {"KiB", 1024.0},
                                    {"MiB", 1024.0 * 1024},
                                    {"GiB", 1024.0 * 1024 * 1024},
                                    {"TiB", 1024.0 * 1024 * 1024 * 1024}};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  return Scaled(static_cast<double>(bytes), kUnits, std::size(kUnits));
}

std::string FormatCount(uint64_t n) {
  std::string digits = absl::StrCat(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string FormatUtc(int64_t realtime_ns) {
  // Floor division keeps times before 1970 correct.
  int64_t seconds = realtime_ns / 1000000000;
  int64_t nanos = realtime_ns % 1000000000;
  if (nanos < 0) {
    nanos += 1000000000;
    --seconds;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return absl::StrCat(realtime_ns, " ns");
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
  return absl::StrFormat("%s.%03d UTC", date, nanos / 1000000);
}

std::string Plural(uint64_t n, std::string_view word, std::string_view plural) {
  if (n == 1) return absl::StrCat("1 ", std::string(word));
  if (plural.empty()) {
    return absl::StrCat(FormatCount(n), " ", std::string(word), "s");
  }
  return absl::StrCat(FormatCount(n), " ", std::string(plural));
}

std::string WithoutPathPrefix(std::string_view message, std::string_view path) {
  if (!path.empty() && message.size() > path.size() + 2 &&
      message.starts_with(path) && message.substr(path.size(), 2) == ": ") {
    message.remove_prefix(path.size() + 2);
  }
  return std::string(message);
}

ProgressLine::ProgressLine(const CommandIo& io, std::string label,
                           std::string unit)
    : io_(io), label_(std::move(label)), unit_(std::move(unit)) {}

void ProgressLine::Update(size_t done, size_t total) {
  if (!io_.err_is_tty) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total &&
      now - last_draw_ < std::chrono::milliseconds(100)) {
    return;
  }
  last_draw_ = now;
  drawn_ = true;
  const int percent = total == 0
                          ? 100
                          : static_cast<int>(100.0 * static_cast<double>(done) /
                                             static_cast<double>(total));
  // \r and "erase line" redraw in place.
  std::fprintf(io_.err, "\r\x1b[2K%s: %zu/%zu %s (%d%%)", label_.c_str(), done,
               total, unit_.c_str(), percent);
  std::fflush(io_.err);
}

void ProgressLine::Finish() {
  if (!drawn_) return;
  drawn_ = false;
  std::fprintf(io_.err, "\r\x1b[2K");
  std::fflush(io_.err);
}

}  // namespace podscope::tools
