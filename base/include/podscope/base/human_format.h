// Numbers as people read them: durations and byte sizes with a unit chosen
// by magnitude, counts with digit grouping.
//
// Contract: three significant digits ("1.23", "12.3", "123"), in the
// largest unit that keeps the number at least 1 once rounded ("999.96 µs"
// reads "1.00 ms", not "1000 µs"); values below the smallest scaled unit
// are whole numbers ("850 ns", "512 B"). Every input has an output:
// INT64_MIN, negative and non-finite values included.
#ifndef PODSCOPE_BASE_HUMAN_FORMAT_H_
#define PODSCOPE_BASE_HUMAN_FORMAT_H_

#include <cstdint>
#include <string>

namespace podscope::base {

// "0 ns", "850 ns", "12.3 µs", "1.50 ms", "2.25 s", "3600 s", "-1.50 µs".
std::string FormatDuration(int64_t ns);

// Binary units: "512 B", "1.50 KiB", "12.0 MiB", up to TiB. Fractional
// counts (a mean, a counter's value) are rounded: "3 B"; negative ones are
// signed: "-2.00 KiB".
std::string FormatBytes(double bytes);

// "1,234,567".
std::string FormatCount(uint64_t n);

// x (>= 0) with three significant digits: "0", "1.23", "12.3", "123",
// "1234" (never fewer digits before the point than x has).
std::string FormatThreeDigits(double x);

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_HUMAN_FORMAT_H_
