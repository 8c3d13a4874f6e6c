#include "podscope/trace_format/clock_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace podscope::trace_format {
namespace {

// Clock records come from files and may be absurd: arithmetic on them must
// not be undefined behaviour, so sums wrap and conversions saturate.
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
uint64_t Distance(int64_t a, int64_t b) {
  return a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
               : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
}
int64_t Saturate(double v) {
  if (!(v > -9.2e18)) return v != v ? 0 : INT64_MIN;
  if (v > 9.2e18) return INT64_MAX;
  return static_cast<int64_t>(std::llround(v));
}

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
  if (offsets_.size() == 1) return WrapAdd(local_ns, offsets_[0].offset_ns);
  auto it = std::upper_bound(
      offsets_.begin(), offsets_.end(), local_ns,
      [](int64_t t, const Point& p) { return t < p.local_ns; });
  // The segment [a, b] that contains local_ns, or the nearest one.
  size_t b = static_cast<size_t>(it - offsets_.begin());
  b = std::clamp<size_t>(b, 1, offsets_.size() - 1);
  const Point& pa = offsets_[b - 1];
  const Point& pb = offsets_[b];
  const double span = static_cast<double>(pb.local_ns) -
                      static_cast<double>(pa.local_ns);
  const double slope = (static_cast<double>(pb.offset_ns) -
                        static_cast<double>(pa.offset_ns)) /
                       span;
  const double offset =
      static_cast<double>(pa.offset_ns) +
      slope * (static_cast<double>(local_ns) - static_cast<double>(pa.local_ns));
  return WrapAdd(local_ns, Saturate(offset));
}

int64_t ClockModel::UncertaintyAt(int64_t local_ns) const {
  if (offsets_.empty()) return 0;
  const Point* nearest = &offsets_[0];
  for (const Point& p : offsets_) {
    if (Distance(p.local_ns, local_ns) < Distance(nearest->local_ns, local_ns)) {
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
    if (Distance(s.monotonic_ns(), local_ns) <
        Distance(nearest->monotonic_ns(), local_ns)) {
      nearest = &s;
    }
  }
  return WrapAdd(nearest->realtime_ns(),
                 WrapSub(local_ns, nearest->monotonic_ns()));
}

}  // namespace podscope::trace_format
