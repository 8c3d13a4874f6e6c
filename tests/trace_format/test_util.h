// Helpers shared by the trace_format tests: events in a form that can be
// compared as multisets (arguments and flows attached, indices resolved),
// and brute-force references for what the reader computes.
#ifndef PODSCOPE_TESTS_TRACE_FORMAT_TEST_UTIL_H_
#define PODSCOPE_TESTS_TRACE_FORMAT_TEST_UTIL_H_

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "podscope/trace_format/events.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/trace.pb.h"
#include "podscope/trace_format/writer.h"

namespace podscope::trace_format::testing {

enum class FlatKind { kSlice, kInstant, kCounter, kSample };

// One event with everything attached to it, independent of its position.
struct FlatEvent {
  uint32_t track = 0;
  FlatKind kind = FlatKind::kSlice;
  int64_t ts = 0;
  int64_t duration = 0;           // slices
  uint32_t id = 0;                // name (slices, instants) or stack (samples)
  uint64_t value_bits = 0;        // counters: bits, so NaN and -0.0 compare
  std::vector<std::string> args;  // "key=type:value"
  std::vector<std::pair<uint64_t, int>> flows;  // (id, phase), sorted
  auto operator<=>(const FlatEvent&) const = default;
};
void PrintTo(const FlatEvent& e, std::ostream* os);

std::string DescribeArg(const Arg& arg);

// Flattens one track's events. Arguments or flows that refer to a missing
// event are a test failure.
std::vector<FlatEvent> Flatten(const TrackEvents& events);
std::vector<FlatEvent> Flatten(const std::vector<TrackEvents>& tracks);
// Sorted, for multiset comparison.
std::vector<FlatEvent> Sorted(std::vector<FlatEvent> events);

// Every event a reader returns from all tracks, sorted.
std::vector<FlatEvent> ReadAllFlat(const TraceReader& reader, int threads = 1);

// Nesting depth by brute force: the slices before slice i (in reader order)
// whose closed interval contains slice i's. Exact for properly nested
// slices.
std::vector<uint32_t> BruteForceDepths(const std::vector<Slice>& slices);

// The written events in memory, for brute-force comparisons.
class EventLog {
 public:
  void AddSlice(uint32_t track, int64_t start, int64_t duration, uint32_t name,
                std::vector<Arg> args = {});
  void AddInstant(uint32_t track, int64_t ts, uint32_t name,
                  std::vector<Arg> args = {});
  void AddCounter(uint32_t track, int64_t ts, double value);
  void AddSample(uint32_t track, int64_t ts, uint32_t stack);
  // Attaches a flow to the last slice or instant added.
  void AddFlowToLast(uint64_t flow_id, FlowPhase phase);

  std::vector<FlatEvent> All() const { return Sorted(events_); }
  // The events of `track` that overlap [t0, t1] (closed), sorted.
  std::vector<FlatEvent> Overlapping(uint32_t track, int64_t t0,
                                     int64_t t1) const;

 private:
  std::vector<FlatEvent> events_;
};

// Opens `data` and fails the test (returning null) if it cannot be opened.
std::unique_ptr<TraceReader> OpenOrDie(std::string data,
                                       const ReaderOptions& options = {});

// Opens `data` both through its index and by scanning every record, and
// checks that both see an intact file.
std::vector<std::unique_ptr<TraceReader>> OpenBothWays(const std::string& data);

// A writer into `data`; fails the test (returning null) if it cannot.
std::unique_ptr<TraceWriter> NewWriter(std::string* data,
                                       WriterOptions options = {});

// Adds a thread track named `name`.
uint32_t ThreadTrack(TraceWriter& w, const std::string& name);

// The index of a closed file, parsed by hand through the trailer.
bool ReadIndex(const std::string& file, proto::Index* index);

// The chunk record at `offset`, inflated and parsed.
bool ReadChunkProto(const std::string& file, uint64_t offset,
                    proto::Chunk* chunk);

// The per-track flags of the packed chunk record at `offset` (format 1.1,
// docs/trace-format.md "Packed chunks"), read by hand from the spec: track
// id -> flags. False if the record is not a packed chunk.
inline constexpr uint32_t kPackedFlatSlices = 1;
inline constexpr uint32_t kPackedIntegralCounters = 2;
bool ReadPackedTrackFlags(const std::string& file, uint64_t offset,
                          std::map<uint32_t, uint32_t>* flags);

}  // namespace podscope::trace_format::testing

#endif  // PODSCOPE_TESTS_TRACE_FORMAT_TEST_UTIL_H_
