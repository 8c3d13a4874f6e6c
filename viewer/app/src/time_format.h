// Times and durations as a user reads and types them.
#ifndef PODSCOPE_VIEWER_APP_TIME_FORMAT_H_
#define PODSCOPE_VIEWER_APP_TIME_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "podscope/base/human_format.h"

namespace podscope::viewer::app {

// A duration with three significant digits in the largest unit that keeps
// it at least 1: "0 ns", "950 ns", "1.23 µs", "45.6 ms", "2.35 s" (base's,
// as the command line prints them).
using base::FormatDuration;

// A counter's value in its unit, three significant digits: "ns" as a
// duration, "bytes" in B/KiB/MiB/GiB/TiB, "%" as is, other units (or none)
// with k/M/G/T for thousands: "474 MiB", "1.60 s", "203 %", "34 count",
// "1.25M events".
std::string FormatValue(double v, std::string_view unit);

// A duration or time offset typed by a user: a decimal number with a unit
// suffix ns, us (or µs), ms or s, e.g. "1.5ms", "250 us", "2s". A bare "0"
// is allowed; any other bare number is an error, since no unit is the
// obvious one. nullopt with `error` set when the text is not one.
std::optional<int64_t> ParseDuration(std::string_view text, std::string* error);

// "T0:T1", both offsets from the start of the trace (ParseDuration's
// syntax). An empty side means the trace's start or end.
struct TimeRangeSpec {
  std::optional<int64_t> t0;
  std::optional<int64_t> t1;
};
std::optional<TimeRangeSpec> ParseRange(std::string_view text,
                                        std::string* error);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TIME_FORMAT_H_
