// Statistics of interleaved pairs (one run without, one with what is being
// costed): the median paired difference and its bootstrap confidence
// interval.
#ifndef PODSCOPE_BENCH_COMMON_PAIRED_STATS_H_
#define PODSCOPE_BENCH_COMMON_PAIRED_STATS_H_

#include <cstdint>
#include <vector>

namespace podscope::bench {

// Linear interpolation between the order statistics around q (0..1).
double Quantile(std::vector<double> v, double q);

struct MedianInterval {
  double median = 0;
  double low = 0;   // 2.5th percentile of the bootstrap medians
  double high = 0;  // 97.5th
};

// The median of `values` with a 95 % percentile-bootstrap interval over
// `resamples` resamples drawn with a fixed seed (the same data always gives
// the same interval).
MedianInterval BootstrapMedian(const std::vector<double>& values,
                               int resamples = 4000, uint64_t seed = 1);

}  // namespace podscope::bench

#endif  // PODSCOPE_BENCH_COMMON_PAIRED_STATS_H_
