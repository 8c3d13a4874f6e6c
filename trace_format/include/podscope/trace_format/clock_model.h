// Maps a file's local monotonic timestamps to the capture's reference clock
// (from the ClockOffset records) and to wall-clock time (from the
// ClockSnapshot records).
#ifndef PODSCOPE_TRACE_FORMAT_CLOCK_MODEL_H_
#define PODSCOPE_TRACE_FORMAT_CLOCK_MODEL_H_

#include <cstdint>
#include <optional>
#include <vector>

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

 private:
  struct Point {
    int64_t local_ns;
    int64_t offset_ns;
    int64_t uncertainty_ns;
  };
  std::vector<Point> offsets_;  // by local time, one per instant
  std::vector<proto::ClockSnapshot> snapshots_;  // by monotonic time
};

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_CLOCK_MODEL_H_
