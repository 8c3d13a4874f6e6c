// Arithmetic on values that come from files and peers, and small
// statistics every analysis needs.
//
// Contract:
// - SaturatingAdd / SaturatingSub give a + b and a - b, clamped to the
//   ends of int64 instead of wrapping (times and sizes read from any file).
// - Median(v): the middle value of v; for an even count, the mean of the
//   two middle ones rounded toward the lower (for integers); 0 for none.
//   Linear in v's size.
#ifndef PODSCOPE_BASE_NUMERIC_H_
#define PODSCOPE_BASE_NUMERIC_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace podscope::base {

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max()
               : std::numeric_limits<int64_t>::min();
}

inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t difference;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? std::numeric_limits<int64_t>::max()
               : std::numeric_limits<int64_t>::min();
}

template <typename T>
T Median(std::vector<T> v) {
  if (v.empty()) return T{};
  const size_t n = v.size();
  auto upper = v.begin() + n / 2;
  std::nth_element(v.begin(), upper, v.end());
  if (n % 2 == 1) return *upper;
  const T lower = *std::max_element(v.begin(), upper);
  if constexpr (std::is_integral_v<T>) {
    // In 128 bits, the difference of any two int64 values fits.
    return static_cast<T>(lower + (static_cast<__int128>(*upper) - lower) / 2);
  } else {
    return lower + (*upper - lower) / 2;
  }
}

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_NUMERIC_H_
