// Maps a file's local monotonic timestamps to the capture's reference clock
// (from the ClockOffset records) and to wall-clock time (from the
// ClockSnapshot records). Records come from files and may hold absurd
// values: every conversion is defined for every input (sums wrap,
// interpolated offsets saturate), never undefined behaviour.
#ifndef PODSCOPE_TRACE_FORMAT_CLOCK_MODEL_H_
#define PODSCOPE_TRACE_FORMAT_CLOCK_MODEL_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "podscope/base/clock_fit.h"
#include "podscope/base/coding.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {

class ClockModel {
 private:
  struct Point {
    int64_t local_ns;
    int64_t offset_ns;
    int64_t uncertainty_ns;
  };
  struct Piece {
    size_t anchor = 0;
    double slope = 0;
    int64_t lo = 0;  // [lo, hi): the local times the piece serves
    int64_t hi = 0;
    // The anchor's local time and offset as doubles, converted once for
    // every timestamp the piece serves.
    double anchor_local = 0;
    double anchor_offset = 0;
  };

 public:
  ClockModel() = default;
  explicit ClockModel(const proto::ClockRecord& record);

  // True when the file holds at least one offset to a reference clock.
  bool has_reference() const { return !offsets_.empty(); }

  // The reference time of local monotonic time `local_ns`: offsets are
  // interpolated linearly between measurements (so drift is followed).
  // Outside them they are extrapolated with the drift the measurements
  // resolve: the slope to the nearest measurement far enough away that the
  // two uncertainties allow at most kResolvedSlope of error, or failing
  // that the farthest one; a slope no larger than its own uncertainty is
  // noise and extrapolates as no drift (a burst of probes a few hundred
  // microseconds apart never predicts the offset seconds later). Without
  // offsets, the local time itself.
  int64_t ToReference(int64_t local_ns) const;
  // How far ToReference(local_ns) may be from the truth: the interval
  // base::ClockFit states from every measurement (each taken as a bound at
  // its time, the drift bounded by the measurements themselves), widened
  // to be centred on ToReference's interpolation; never below
  // base::kClockCompareFloorNs (0 without offsets).
  int64_t UncertaintyAt(int64_t local_ns) const;
  // How fast the local clock runs against the reference, in parts per
  // million (positive: it gains): the slope used after the last
  // measurement (0 with fewer than two, or when the measurements do not
  // resolve one).
  double DriftPpm() const;

  // A slope known to within this (10 ppm) is taken as resolved.
  static constexpr double kResolvedSlope = 1e-5;

  // Wall-clock time of a local monotonic time, from the nearest snapshot.
  std::optional<int64_t> ToRealtime(int64_t local_ns) const;

  // ToReference for many timestamps, mostly ascending (a file being
  // loaded): the same result bit for bit, with the segment of the previous
  // call reused instead of searched. The model must outlive the cursor.
  class Cursor {
   public:
    explicit Cursor(const ClockModel& model) : model_(&model) {}
    // Inlined: a load maps every timestamp of a file through here, and a
    // call per timestamp costs as much as the interpolation itself.
    [[gnu::always_inline]] int64_t ToReference(int64_t local_ns) {
      if (model_->offsets_.size() < 2) return model_->ToReference(local_ns);
      if (local_ns < piece_.lo || local_ns >= piece_.hi) {
        piece_ = model_->PieceAt(local_ns);
      }
      return model_->Interpolate(piece_, local_ns);
    }

   private:
    const ClockModel* model_;
    Piece piece_;  // none yet: an empty range
  };

 private:
  // With two offsets or more: the line that serves local times [lo, hi),
  // through measurement `anchor` with `slope`.
  Piece PieceAt(int64_t local_ns) const;
  double Slope(size_t a, size_t b) const;
  // The slope from measurement `from` towards the others in direction
  // `step` (+1 or -1), as ToReference describes.
  double ExtrapolationSlope(size_t from, int step) const;
  int64_t Interpolate(const Piece& piece, int64_t local_ns) const {
    const double offset =
        piece.anchor_offset +
        piece.slope * (static_cast<double>(local_ns) - piece.anchor_local);
    return base::WrappingAdd(local_ns, base::SaturatingRound(offset));
  }

  std::vector<Point> offsets_;  // by local time, one per instant
  base::ClockFit fit_{{}};      // of offsets_
  double head_slope_ = 0;       // before the first measurement
  double tail_slope_ = 0;       // after the last
  std::vector<proto::ClockSnapshot> snapshots_;  // by monotonic time
};

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_CLOCK_MODEL_H_
