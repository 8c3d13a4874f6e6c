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
  std::vector<base::ClockSample> samples;
  for (const Point& p : offsets_) {
    samples.push_back({p.local_ns, p.offset_ns, p.uncertainty_ns, 0});
  }
  fit_ = base::ClockFit(std::move(samples));
  if (offsets_.size() >= 2) {
    head_slope_ = ExtrapolationSlope(0, +1);
    tail_slope_ = ExtrapolationSlope(offsets_.size() - 1, -1);
  }
  snapshots_.assign(record.snapshots().begin(), record.snapshots().end());
  std::sort(snapshots_.begin(), snapshots_.end(),
            [](const proto::ClockSnapshot& a, const proto::ClockSnapshot& b) {
              return a.monotonic_ns() < b.monotonic_ns();
            });
}

int64_t ClockModel::ToReference(int64_t local_ns) const {
  if (offsets_.empty()) return local_ns;
  if (offsets_.size() == 1) return WrappingAdd(local_ns, offsets_[0].offset_ns);
  return Interpolate(PieceAt(local_ns), local_ns);
}

ClockModel::Piece ClockModel::PieceAt(int64_t local_ns) const {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const size_t n = offsets_.size();
  auto it = std::upper_bound(
      offsets_.begin(), offsets_.end(), local_ns,
      [](int64_t t, const Point& p) { return t < p.local_ns; });
  const size_t b = static_cast<size_t>(it - offsets_.begin());
  Piece piece;
  if (b == 0) {
    piece = {0, head_slope_, kMin, offsets_[0].local_ns};
  } else if (b == n) {
    piece = {n - 1, tail_slope_, offsets_[n - 1].local_ns, kMax};
  } else {
    piece = {b - 1, Slope(b - 1, b), offsets_[b - 1].local_ns,
             offsets_[b].local_ns};
  }
  piece.anchor_local = static_cast<double>(offsets_[piece.anchor].local_ns);
  piece.anchor_offset = static_cast<double>(offsets_[piece.anchor].offset_ns);
  return piece;
}

double ClockModel::Slope(size_t a, size_t b) const {
  const Point& pa = offsets_[a];
  const Point& pb = offsets_[b];
  const double span =
      static_cast<double>(pb.local_ns) - static_cast<double>(pa.local_ns);
  return (static_cast<double>(pb.offset_ns) -
          static_cast<double>(pa.offset_ns)) /
         span;
}

double ClockModel::ExtrapolationSlope(size_t from, int step) const {
  const Point& p = offsets_[from];
  // The nearest measurement that resolves the slope, else the farthest.
  size_t chosen = from;
  double resolution = 0;
  for (size_t k = from + step; k < offsets_.size(); k += step) {
    const double span = std::abs(static_cast<double>(offsets_[k].local_ns) -
                                 static_cast<double>(p.local_ns));
    chosen = k;
    resolution = (static_cast<double>(p.uncertainty_ns) +
                  static_cast<double>(offsets_[k].uncertainty_ns)) /
                 span;
    if (resolution <= kResolvedSlope) break;
  }
  if (chosen == from) return 0;
  const double slope = Slope(std::min(from, chosen), std::max(from, chosen));
  // A slope within its own uncertainty is noise, not drift.
  if (!std::isfinite(slope) || std::abs(slope) <= resolution) return 0;
  return slope;
}

int64_t ClockModel::UncertaintyAt(int64_t local_ns) const {
  if (offsets_.empty()) return 0;
  const base::ClockInterval i = fit_.At(local_ns);
  // The interval around the offset ToReference applies here.
  const __int128 applied = WrappingSub(ToReference(local_ns), local_ns);
  const __int128 lo = __int128{i.offset_ns} - i.uncertainty_ns;
  const __int128 hi = __int128{i.offset_ns} + i.uncertainty_ns;
  const __int128 reach = std::max(applied - lo, hi - applied);
  if (reach >= std::numeric_limits<int64_t>::max()) {
    return std::numeric_limits<int64_t>::max();
  }
  return std::max(static_cast<int64_t>(reach), base::kClockCompareFloorNs);
}

double ClockModel::DriftPpm() const {
  // A local clock that gains on the reference needs less offset as it
  // goes: the drift is the offset's slope, negated.
  return offsets_.size() < 2 || tail_slope_ == 0 ? 0 : -1e6 * tail_slope_;
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
