// trace_format::ClockModel::ToReference, bit for bit, made cheap for the
// millions of timestamps of a load: the segment of the last call is reused
// (timestamps mostly ascend) and rounding is inlined.
#ifndef PODSCOPE_VIEWER_CLOCK_MAPPER_H_
#define PODSCOPE_VIEWER_CLOCK_MAPPER_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "podscope/trace_format/trace.pb.h"

namespace podscope::viewer {

class ClockMapper {
 public:
  explicit ClockMapper(const trace_format::proto::ClockRecord& record) {
    // The points ClockModel keeps: by local time, the most certain of each
    // instant.
    struct Raw {
      int64_t local, offset, uncertainty;
    };
    std::vector<Raw> raw;
    for (const auto& o : record.offsets()) {
      raw.push_back({o.local_monotonic_ns(), o.offset_ns(),
                     std::max<int64_t>(o.uncertainty_ns(), 0)});
    }
    std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) {
      if (a.local != b.local) return a.local < b.local;
      return a.uncertainty < b.uncertainty;
    });
    raw.erase(std::unique(raw.begin(), raw.end(),
                          [](const Raw& a, const Raw& b) {
                            return a.local == b.local;
                          }),
              raw.end());
    for (const Raw& r : raw) points_.push_back({r.local, r.offset});
  }

  bool has_reference() const { return !points_.empty(); }

  int64_t ToReference(int64_t local) {
    const size_t n = points_.size();
    if (n == 0) return local;
    if (n == 1) return local + points_[0].offset;
    if (local < lo_ || local >= hi_) Select(local);
    const double offset = static_cast<double>(a_->offset) +
                          slope_ * static_cast<double>(local - a_->local);
    return local + RoundHalfAway(offset);
  }

 private:
  struct Point {
    int64_t local;
    int64_t offset;
  };
  // std::llround for |x| < 2^63.
  static int64_t RoundHalfAway(double x) {
    int64_t t = static_cast<int64_t>(x);
    const double frac = x - static_cast<double>(t);
    if (frac >= 0.5) ++t;
    if (frac <= -0.5) --t;
    return t;
  }
  void Select(int64_t local) {
    auto it =
        std::upper_bound(points_.begin(), points_.end(), local,
                         [](int64_t t, const Point& p) { return t < p.local; });
    size_t b = static_cast<size_t>(it - points_.begin());
    b = std::clamp<size_t>(b, 1, points_.size() - 1);
    a_ = &points_[b - 1];
    const Point& pb = points_[b];
    const double span = static_cast<double>(pb.local - a_->local);
    slope_ = static_cast<double>(pb.offset - a_->offset) / span;
    lo_ = b == 1 ? std::numeric_limits<int64_t>::min() : a_->local;
    hi_ = b == points_.size() - 1 ? std::numeric_limits<int64_t>::max()
                                  : pb.local;
  }

  std::vector<Point> points_;
  const Point* a_ = nullptr;
  double slope_ = 0;
  int64_t lo_ = 0;  // [lo_, hi_): times the selected segment serves
  int64_t hi_ = 0;
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_CLOCK_MAPPER_H_
