// XSpace (`.xplane.pb`), the trace format of XProf and TensorBoard's profile
// plugin, written and read by JAX, TensorFlow and PyTorch/XLA.
//
// Export: one XSpace per trace file (= per host process), with a plane
// "/host:CPU" holding a line per thread and counter track, a plane
// "/device:GPU:<n>", "/device:TPU:<n>" or (any other kind, named in the
// plane's "device_type_string" stat) "/device:CUSTOM:<n>" per device
// holding a line per stream, arguments as stats, times in picoseconds
// against each line's timestamp_ns (Unix epoch), and steps marked as XProf
// expects (step_num, _r and group_id stats on host steps, group_id on
// device events, a "Steps" line with XProf's step line id on TPU and custom
// planes). What XSpace has no words for (metadata, clocks, track kinds,
// stack samples) travels in a stat XProf ignores, so that importing the
// XSpace back gives the same trace.
//
// Import (ImportXSpace in import.h, or XSpaceToPodtrace here): nested
// events, stats by value or by ref_value, metadata stats, num_occurrences,
// several planes; a damaged or truncated file is an error naming it.
#ifndef PODSCOPE_TRACE_FORMAT_XSPACE_H_
#define PODSCOPE_TRACE_FORMAT_XSPACE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"
#include "podscope/trace_format/xplane.pb.h"

namespace podscope::trace_format {

// What an XSpace offers for lining its host up with others
// (host_alignment.h): its events' span on the host's clock, and its
// collectives' ends, each keyed by a Podscope collective id or else by
// XLA's op name with its step and its occurrence in that step on its line
// (an op on several devices of the host: the last end). Times outside
// [0, 2^62) ns are left out.
struct XSpaceCollectives {
  uint64_t events = 0;
  bool has_span = false;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  std::vector<std::pair<std::string, int64_t>> ends;
};
XSpaceCollectives CollectivesOfXSpace(
    const tensorflow::profiler::XSpace& space);

struct XSpaceExportOptions {
  // XProf's tracer levels: 0 leaves the host plane (threads, counters) or
  // the device planes out; any other level keeps them whole (a capture
  // applies the host level when recording, see docs/interop.md).
  int host_tracer_level = 3;
  int device_tracer_level = 1;
  // At most this many events per XSpace (0: all); the XSpace's warnings
  // say when events were left out.
  uint64_t max_events = 0;
  // Called per track written: (done, total).
  std::function<void(size_t done, size_t total)> progress;
};

// The XSpace of one trace file.
absl::StatusOr<tensorflow::profiler::XSpace> ToXSpace(
    const TraceReader& reader, const XSpaceExportOptions& options = {});

struct XSpaceExportStats {
  std::vector<std::string> files;  // written, in reader order
  uint64_t events = 0;
  uint64_t bytes = 0;
};

// Writes `logdir`/plugins/profile/<session>/<host>.xplane.pb, one file per
// reader (<host>.<pid>.xplane.pb when a host has several processes), the
// layout XProf and TensorBoard read. `session` empty: the files' session
// id, else "podscope".
absl::StatusOr<XSpaceExportStats> ExportXSpace(
    std::span<const TraceReader* const> readers, const std::string& logdir,
    const std::string& session, const XSpaceExportOptions& options = {});

struct XSpaceImportFacts {
  std::string source;   // named in errors and the file's metadata
  std::string session;  // the session id to record
  std::string host;     // when the XSpace names no host
  int32_t process_index = -1;
  int32_t process_count = 0;
  // How this host's Unix epoch clock maps to a reference clock (a capture
  // that measured it); empty: the epoch clock itself is the reference, as
  // XProf assumes. Applies to XSpaces not written by Podscope.
  std::vector<proto::ClockOffset> clock;
  // Attributes added to the file's metadata (what produced it, say).
  std::vector<std::pair<std::string, std::string>> attributes;
};

struct XSpaceImportStats {
  std::string host;
  int64_t pid = 0;
  uint64_t events = 0;
  uint64_t tracks = 0;
};

// Parses `data` (a serialized XSpace) and writes it into `writer` (which the
// caller then closes). An error names `facts.source` when `data` is not an
// XSpace.
absl::StatusOr<XSpaceImportStats> XSpaceToPodtrace(
    std::string_view data, const XSpaceImportFacts& facts, TraceWriter& writer);
// The same for an XSpace already parsed (one a capture received).
absl::StatusOr<XSpaceImportStats> XSpaceToPodtrace(
    const tensorflow::profiler::XSpace& space, const XSpaceImportFacts& facts,
    TraceWriter& writer);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_XSPACE_H_
