#include "podscope/trace_format/clock_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "podscope/base/coding.h"

namespace podscope::trace_format {
namespace {

// Clock records come from files and may be absurd: arithmetic on them must
// not be undefined behaviour, so sums wrap and conversions saturate.
using base::AbsDifference;
using base::WrappingAdd;
using base::WrappingSub;

}  // namespace

ClockModel::ClockModel(const proto::ClockRecord& record) {
  for (const proto::ClockOffset& o : record.offsets()) {
    offsets_.push_back({o.local_monotonic_ns(), o.offset_ns(),
                        std::max<int64_t>(o.uncertainty_ns(), 0)});
  }
  std::sort(offsets_.begin(), offsets_.end(),
            [](const Point& a, const Point& b) {
              if (a.local_ns != b.local_ns) return a.local_ns < b.local_ns;
              return a.uncertainty_ns < b.uncertainty_ns;
            });
  // Several measurements at one instant: keep the most certain.
  offsets_.erase(std::unique(offsets_.begin(), offsets_.end(),
                             [](const Point& a, const Point& b) {
                               return a.local_ns == b.local_ns;
                             }),
                 offsets_.end());
  snapshots_.assign(record.snapshots().begin(), record.snapshots().end());
  std::sort(snapshots_.begin(), snapshots_.end(),
            [](const proto::ClockSnapshot& a, const proto::ClockSnapshot& b) {
              return a.monotonic_ns() < b.monotonic_ns();
            });
}

int64_t ClockModel::ToReference(int64_t local_ns) const {
  if (offsets_.empty()) return local_ns;
  if (offsets_.size() == 1) return WrappingAdd(local_ns, offsets_[0].offset_ns);
  const size_t b = Segment(local_ns);
  return Interpolate(b, Slope(b), local_ns);
}

size_t ClockModel::Segment(int64_t local_ns) const {
  auto it = std::upper_bound(
      offsets_.begin(), offsets_.end(), local_ns,
      [](int64_t t, const Point& p) { return t < p.local_ns; });
  const size_t b = static_cast<size_t>(it - offsets_.begin());
  return std::clamp<size_t>(b, 1, offsets_.size() - 1);
}

double ClockModel::Slope(size_t b) const {
  const Point& pa = offsets_[b - 1];
  const Point& pb = offsets_[b];
  const double span =
      static_cast<double>(pb.local_ns) - static_cast<double>(pa.local_ns);
  return (static_cast<double>(pb.offset_ns) -
          static_cast<double>(pa.offset_ns)) /
         span;
}

void ClockModel::Cursor::Select(int64_t local_ns) {
  const std::vector<Point>& points = model_->offsets_;
  segment_ = model_->Segment(local_ns);
  slope_ = model_->Slope(segment_);
  lo_ = segment_ == 1 ? std::numeric_limits<int64_t>::min()
                      : points[segment_ - 1].local_ns;
  hi_ = segment_ == points.size() - 1 ? std::numeric_limits<int64_t>::max()
                                      : points[segment_].local_ns;
}

int64_t ClockModel::UncertaintyAt(int64_t local_ns) const {
  if (offsets_.empty()) return 0;
  const Point* nearest = &offsets_[0];
  for (const Point& p : offsets_) {
    if (AbsDifference(p.local_ns, local_ns) <
        AbsDifference(nearest->local_ns, local_ns)) {
      nearest = &p;
    }
  }
  return nearest->uncertainty_ns;
}

double ClockModel::DriftPpm() const {
  if (offsets_.size() < 2) return 0;
  const Point& a = offsets_.front();
  const Point& b = offsets_.back();
  // A local clock that gains on the reference needs less offset as it
  // goes: the drift is the offset's slope, negated.
  return -1e6 *
         (static_cast<double>(b.offset_ns) - static_cast<double>(a.offset_ns)) /
         (static_cast<double>(b.local_ns) - static_cast<double>(a.local_ns));
}

std::optional<int64_t> ClockModel::ToRealtime(int64_t local_ns) const {
  if (snapshots_.empty()) return std::nullopt;
  const proto::ClockSnapshot* nearest = &snapshots_[0];
  for (const proto::ClockSnapshot& s : snapshots_) {
    if (AbsDifference(s.monotonic_ns(), local_ns) <
        AbsDifference(nearest->monotonic_ns(), local_ns)) {
      nearest = &s;
    }
  }
  return WrappingAdd(nearest->realtime_ns(),
                     WrappingSub(local_ns, nearest->monotonic_ns()));
}

}  // namespace podscope::trace_format
