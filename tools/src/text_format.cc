#include "text_format.h"

#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace podscope::tools {

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
