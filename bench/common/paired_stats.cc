#include "common/paired_stats.h"

#include <algorithm>
#include <random>

namespace podscope::bench {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<size_t>(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (v[i + 1] - v[i]) * (pos - static_cast<double>(i));
}

MedianInterval BootstrapMedian(const std::vector<double>& values, int resamples,
                               uint64_t seed) {
  MedianInterval out;
  if (values.empty()) return out;
  out.median = Quantile(values, 0.5);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
  std::vector<double> medians;
  medians.reserve(static_cast<size_t>(std::max(resamples, 1)));
  std::vector<double> sample(values.size());
  for (int r = 0; r < resamples; ++r) {
    for (double& x : sample) x = values[pick(rng)];
    medians.push_back(Quantile(sample, 0.5));
  }
  out.low = Quantile(medians, 0.025);
  out.high = Quantile(medians, 0.975);
  return out;
}

}  // namespace podscope::bench
