// Text as people read it in the podscope command's output: durations,
// sizes and counts (base/human_format.h), times of day, plurals, progress
// on a terminal.
#ifndef PODSCOPE_TOOLS_TEXT_FORMAT_H_
#define PODSCOPE_TOOLS_TEXT_FORMAT_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "command.h"
#include "podscope/base/human_format.h"

namespace podscope::tools {

// "12.3 µs", "1.50 KiB", "1,234,567": base's formatters, which the viewer
// uses too.
using base::FormatBytes;
using base::FormatCount;
using base::FormatDuration;

// "2024-05-01 10:00:00.123 UTC" for nanoseconds since the Unix epoch.
std::string FormatUtc(int64_t realtime_ns);

// `n` followed by `word`, or by `plural` (default: `word` + "s") unless n
// is 1: "1 file", "3 files", "2 processes".
std::string Plural(uint64_t n, std::string_view word,
                   std::string_view plural = {});

// `message` without a leading "<path>: ", for output that already names
// the file (the trace reader's messages start with the path).
std::string WithoutPathPrefix(std::string_view message, std::string_view path);

// A line on stderr that redraws itself ("exporting: 12/40 tracks (30%)"),
// only when stderr is a terminal and at most ten times a second.
class ProgressLine {
 public:
  ProgressLine(const CommandIo& io, std::string label, std::string unit);
  ~ProgressLine() { Finish(); }
  void Update(size_t done, size_t total);
  // Erases the line so that the next output starts on a clean line.
  void Finish();

 private:
  const CommandIo& io_;
  std::string label_;
  std::string unit_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_TEXT_FORMAT_H_
