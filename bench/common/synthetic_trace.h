// Generates realistic synthetic traces for benchmarks, the demo and tests:
// threads running a training-like loop of nested scopes 1-8 deep drawn
// from a fixed vocabulary of names, with jittered timing, some arguments,
// counters and flows.
#ifndef PODSCOPE_BENCH_COMMON_SYNTHETIC_TRACE_H_
#define PODSCOPE_BENCH_COMMON_SYNTHETIC_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "podscope/trace_format/writer.h"

namespace podscope::bench {

struct SyntheticOptions {
  int threads = 16;
  int distinct_names = 1000;
  int max_depth = 8;
  uint64_t events = 1'000'000;  // slices, approximately (at least this many)
  // One counter sample per this many slices, on each of two counter tracks.
  int slices_per_counter_sample = 50;
  // Fraction of slices that carry an argument.
  double args_fraction = 0.05;
  uint64_t seed = 1;
  int64_t start_ns = 1'000'000'000;
};

// One event as a recorder would hand it to the writer.
struct SyntheticSlice {
  uint32_t thread;  // 0-based
  int64_t start_ns;
  int64_t duration_ns;
  uint32_t name;  // 0-based vocabulary index
  int64_t arg;    // < 0: no argument
};

struct SyntheticTrace {
  std::vector<std::string> names;
  // Per thread, in end order (children before parents).
  std::vector<std::vector<SyntheticSlice>> slices;
  struct Counter {
    int64_t ts_ns;
    double value;
  };
  std::vector<std::vector<Counter>> counters;  // two counter tracks
  uint64_t event_count() const;
};

SyntheticTrace GenerateSyntheticTrace(const SyntheticOptions& options);

// Writes `trace` through `writer` (tracks, strings, events interleaved by
// thread in batches, as a session's writer thread would), without closing.
void WriteSyntheticTrace(const SyntheticTrace& trace,
                         trace_format::TraceWriter* writer);

// Generates and writes a complete file at `path` with host/pid metadata.
absl::Status WriteSyntheticFile(const std::string& path,
                                const SyntheticOptions& options,
                                const std::string& host, int64_t pid,
                                const trace_format::WriterOptions& writer = {});

}  // namespace podscope::bench

#endif  // PODSCOPE_BENCH_COMMON_SYNTHETIC_TRACE_H_
