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

#include "podscope/base/coding.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {

class ClockModel {
 public:
  ClockModel() = default;
  explicit ClockModel(const proto::ClockRecord& record);

  // True when the file holds at least one offset to a reference clock.
  bool has_reference() const { return !offsets_.empty(); }

  // The reference time of local monotonic time `local_ns`: offsets are
  // interpolated linearly between measurements (so drift is followed) and
  // extrapolated with the slope of the nearest pair outside them. Without
  // offsets, the local time itself.
  int64_t ToReference(int64_t local_ns) const;
  // The uncertainty of the nearest measurement (0 without offsets).
  int64_t UncertaintyAt(int64_t local_ns) const;
  // How fast the local clock runs against the reference, in parts per
  // million (positive: it gains), from the first and last measurement (0
  // with fewer than two).
  double DriftPpm() const;

  // Wall-clock time of a local monotonic time, from the nearest snapshot.
  std::optional<int64_t> ToRealtime(int64_t local_ns) const;

  // ToReference for many timestamps, mostly ascending (a file being
  // loaded): the same result bit for bit, with the segment of the previous
  // call reused instead of searched. The model must outlive the cursor.
  class Cursor {
   public:
    explicit Cursor(const ClockModel& model) : model_(&model) {}
    int64_t ToReference(int64_t local_ns) {
      if (model_->offsets_.size() < 2) return model_->ToReference(local_ns);
      if (local_ns < lo_ || local_ns >= hi_) Select(local_ns);
      return model_->Interpolate(segment_, slope_, local_ns);
    }

   private:
    void Select(int64_t local_ns);

    const ClockModel* model_;
    size_t segment_ = 0;
    double slope_ = 0;
    int64_t lo_ = 0;  // [lo_, hi_): the times segment_ serves; none yet
    int64_t hi_ = 0;
  };

 private:
  struct Point {
    int64_t local_ns;
    int64_t offset_ns;
    int64_t uncertainty_ns;
  };
  // With two offsets or more: the segment [b - 1, b] that contains
  // local_ns, or the nearest one; its slope; the reference time on it.
  size_t Segment(int64_t local_ns) const;
  double Slope(size_t b) const;
  int64_t Interpolate(size_t b, double slope, int64_t local_ns) const {
    const Point& pa = offsets_[b - 1];
    const double offset = static_cast<double>(pa.offset_ns) +
                          slope * (static_cast<double>(local_ns) -
                                   static_cast<double>(pa.local_ns));
    return base::WrappingAdd(local_ns, base::SaturatingRound(offset));
  }

  std::vector<Point> offsets_;  // by local time, one per instant
  std::vector<proto::ClockSnapshot> snapshots_;  // by monotonic time
};

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_CLOCK_MODEL_H_
