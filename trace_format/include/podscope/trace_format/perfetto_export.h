// Exports Podscope traces in Perfetto's protobuf trace format (a `Trace` of
// `TracePacket`s), which Perfetto UI and trace_processor open natively.
//
// Contract:
// * Every file is a process (track descriptors for the process, its
//   threads, device streams and counters) on a packet sequence of its own,
//   with interned event and argument names; every interned id is defined
//   on its sequence before (or in the packet where) it is first used.
// * Slices are TYPE_SLICE_BEGIN/END pairs, instants TYPE_INSTANT,
//   counters TYPE_COUNTER, flows flow_ids / terminating_flow_ids, event
//   arguments debug annotations. Slices that overlap without nesting on a
//   track (within a chunk or across chunks) go to extra child tracks so
//   that none is lost or misnested. A flow id left incomplete in several
//   files is one flow across them; other ids are made unique per file.
// * Timestamps are nanoseconds on BUILTIN_CLOCK_BOOTTIME, each file put on
//   its capture's reference clock (as the Chrome exporter does) so that
//   hosts line up. Stack samples are not exported.
// * Written packet by packet as chunks are decoded: memory stays bounded by
//   one chunk and a small state per track, whatever the size of the trace.
#ifndef PODSCOPE_TRACE_FORMAT_PERFETTO_EXPORT_H_
#define PODSCOPE_TRACE_FORMAT_PERFETTO_EXPORT_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "podscope/trace_format/reader.h"

namespace podscope::trace_format {

struct PerfettoExportOptions {
  // Put every file on its capture's reference clock when it has clock
  // offsets, so that hosts line up.
  bool align_clocks = true;
  // Called after each chunk with (chunks done, chunks in all).
  std::function<void(size_t, size_t)> progress;
};

struct PerfettoExportStats {
  uint64_t events = 0;   // podtrace events exported
  uint64_t packets = 0;  // TracePackets written
  uint64_t bytes = 0;
};

absl::StatusOr<PerfettoExportStats> ExportPerfetto(
    std::span<const TraceReader* const> readers, const std::string& out_path,
    const PerfettoExportOptions& options = {});

// Perfetto's id of the clock the timestamps are on (BUILTIN_CLOCK_BOOTTIME).
inline constexpr uint32_t kPerfettoClockId = 6;

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_PERFETTO_EXPORT_H_
