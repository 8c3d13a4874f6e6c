// Stable sorting of sequences that are already almost in order.
//
// Contract: StableSortNearlySorted(v, less) leaves v sorted by `less`, with
// equal elements in their original order (as std::stable_sort). It costs
// O(n + d) moves, d being the number of out-of-order pairs, and allocates
// nothing, while d stays below a few times n; beyond that budget it
// finishes with std::stable_sort, so its worst case is std::stable_sort's.
// `less` must be a strict weak order.
#ifndef PODSCOPE_BASE_SORTING_H_
#define PODSCOPE_BASE_SORTING_H_

#include <algorithm>
#include <cstddef>
#include <utility>

namespace podscope::base {

template <typename Vector, typename Less>
void StableSortNearlySorted(Vector& v, Less less) {
  const size_t n = v.size();
  // Insertion sort, each element moved back past the larger ones before
  // it, while the moves stay within the budget.
  const size_t budget = 8 * n + 64;
  size_t moves = 0;
  for (size_t i = 1; i < n; ++i) {
    if (!less(v[i], v[i - 1])) continue;
    auto item = std::move(v[i]);
    size_t j = i;
    do {
      v[j] = std::move(v[j - 1]);
      --j;
      ++moves;
    } while (j > 0 && less(item, v[j - 1]));
    v[j] = std::move(item);
    if (moves > budget) {
      // Far from sorted: the first i + 1 are sorted, the rest are not.
      std::stable_sort(v.begin(), v.end(), less);
      return;
    }
  }
}

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_SORTING_H_
