// Random nested traces and small multi-host captures for the viewer/core
// tests and benchmark. Free of GoogleTest so the benchmark can use it.
#ifndef PODSCOPE_TESTS_VIEWER_CORE_TRACE_GEN_H_
#define PODSCOPE_TESTS_VIEWER_CORE_TRACE_GEN_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "podscope/trace_format/events.h"
#include "podscope/trace_format/writer.h"

namespace podscope::viewer::testing {

// Properly nested slices in [0, span) with durations over many scales,
// including empty slices and siblings that touch, in reader order with
// depths. Names are 1..names.
std::vector<trace_format::Slice> RandomNestedSlices(std::mt19937_64& rng,
                                                    size_t approx_count,
                                                    int64_t span,
                                                    uint32_t names);

// Slices that overlap without nesting (as an async track's), in reader
// order with reader depths.
std::vector<trace_format::Slice> RandomOverlappingSlices(std::mt19937_64& rng,
                                                         size_t count,
                                                         int64_t span,
                                                         uint32_t names);

struct TrackSpec {
  trace_format::proto::TrackKind kind = trace_format::proto::TRACK_KIND_THREAD;
  std::string name;
  int32_t sort_index = 0;
  std::vector<trace_format::Slice> slices;      // names: strings below
  std::vector<trace_format::Instant> instants;  // names: strings below
  std::vector<trace_format::CounterSample> counters;
  // Samples: stack index into FileSpec::stacks (frame names, leaf first).
  std::vector<std::pair<int64_t, uint32_t>> samples;
  // Flows: (slice index in `slices`, flow id, phase).
  std::vector<std::tuple<uint32_t, uint64_t, trace_format::FlowPhase>> flows;
};

struct FileSpec {
  std::string host = "host";
  int64_t pid = 1;
  int32_t process_index = 0;
  int32_t process_count = 0;  // 0: unknown
  std::vector<std::string> command_line;
  // Offsets (local time, offset): reference = local + offset.
  std::vector<std::pair<int64_t, int64_t>> offsets;
  std::vector<std::string> strings;  // name i+1 is strings[i]
  std::vector<std::vector<std::string>> stacks;
  std::vector<TrackSpec> tracks;
  size_t chunk_events = 1 << 16;
  int compression_level = 1;
  // The tracks' events written in turn, one of each track at a time, as a
  // recorder's threads fill its chunks; otherwise one track after another
  // (each track then ends chunks before the file does).
  bool interleave_tracks = false;
};

// Writes `spec` to `path` (slices in end order, as a recorder emits them).
absl::Status WriteFile(const std::string& path, const FileSpec& spec);

// A fresh empty folder under the test temp dir.
std::string TempDir(const std::string& name);

}  // namespace podscope::viewer::testing

#endif  // PODSCOPE_TESTS_VIEWER_CORE_TRACE_GEN_H_
