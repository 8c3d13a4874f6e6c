// Trace files with known contents for the podscope command-line tests: a
// two-host capture whose statistics are worked out by hand below, and files
// damaged in known ways.
#ifndef PODSCOPE_TESTS_TOOLS_TRACE_FIXTURES_H_
#define PODSCOPE_TESTS_TOOLS_TRACE_FIXTURES_H_

#include <cstdint>
#include <filesystem>
#include <string>

namespace podscope::tools::testing {

// The two-host capture (host-a.100.podtrace and host-b.200.podtrace).
//
// host-a, pid 100, process 0 of 2, session "s1", "train --steps 3":
//   track "main" (thread): three steps at base = 1 ms + k ms, k = 0..2:
//     step     [base,          900 us]  self 900 - 300 - 300 = 300 us
//       forward  [base+100 us, 300 us]  self 300 - 100 = 200 us
//         matmul [base+150 us, 100 us]  self 100 us
//       backward [base+500 us, 300 us]  self 300 us
//     instant "checkpoint" at base+950 us
//     (step 2's forward and matmul are flushed in an earlier chunk than
//     their parent, as a recorder that flushes mid-step does)
//   track "cpu:0/stream 0" (device stream): "kernel" [base+200 us, 50 us]
//   track "memory" (counter, bytes): 5 values at 1 ms + i * 750 us
//   7 events dropped on "main"; offset 0 to reference clock "client";
//   a clock snapshot: monotonic 0 = realtime kRealtimeBase.
// host-b, pid 200, process 1 of 2, session "s1":
//   track "main" (thread): "step" [50 ms + k ms, 800 us], k = 0..2
//   5 events dropped on "main"; offset -48.98 ms to "client", so its steps
//   start at 1.02 ms, 2.02 ms, 3.02 ms on the reference clock.
//
// Events: host-a 12 slices + 3 instants + 3 kernels + 5 counters = 23,
// host-b 3; 18 slices in all.
// Span aligned: 1 ms to 4 ms (the last counter value); not aligned: 1 ms to
// 52.8 ms (host-b's last step end on its own clock).
struct Capture {
  static constexpr uint64_t kEventsA = 23;
  static constexpr uint64_t kEventsB = 3;
  static constexpr uint64_t kSlices = 18;
  static constexpr int64_t kRealtimeBase = 1'700'000'000'000'000'000;
  static constexpr int64_t kAlignedFirst = 1'000'000;
  static constexpr int64_t kAlignedLast = 4'000'000;
  static constexpr int64_t kLocalLast = 52'800'000;
  // name: count, total, self, max
  static constexpr int64_t kStepTotal = 3 * 900'000 + 3 * 800'000;
  static constexpr int64_t kStepSelf = 3 * 300'000 + 3 * 800'000;
};

// Writes the capture into `dir` (created if needed). Without offsets the
// files carry no ClockOffset records.
void WriteCapture(const std::filesystem::path& dir, bool clock_offsets = true);

// A file of 4 chunks of 10 slices named "tick" (track "main", host-c pid
// 300), cut in various ways. `offsets` receive the byte offsets where each
// chunk record begins.
struct ChunkedFile {
  uint64_t chunk_offset[4] = {0, 0, 0, 0};
  uint64_t closed_size = 0;    // the intact file's size
  uint64_t unclosed_size = 0;  // after the last chunk, before the index
};
// Closed properly.
ChunkedFile WriteChunked(const std::filesystem::path& file);
// The writer died while appending the 4th chunk: 7 bytes of it are on disk,
// no index. 30 events recoverable; 7 bytes skipped at chunk_offset[3].
ChunkedFile WriteTorn(const std::filesystem::path& file);
// The writer died after the 4th chunk: all 40 events, no index, nothing
// skipped.
ChunkedFile WriteUnclosed(const std::filesystem::path& file);
// Closed, but a byte inside chunk 2's payload is flipped: 30 events, the
// chunk's whole record skipped.
ChunkedFile WriteCorrupted(const std::filesystem::path& file);

// Not a trace at all.
void WriteGarbage(const std::filesystem::path& file);
// A header from a future major version.
void WriteNewerVersion(const std::filesystem::path& file);

// A fresh, empty folder under the test temp dir, removed by the caller.
std::filesystem::path MakeTempDir(const std::string& name);

}  // namespace podscope::tools::testing

#endif  // PODSCOPE_TESTS_TOOLS_TRACE_FIXTURES_H_
