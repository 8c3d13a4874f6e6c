// Reading the per-rank trace files of a job back: which rank wrote a file
// (its metadata's process index), its "sync_mark" instants on the
// reference clock, and the marks the workers printed ("marked R K BEFORE
// AFTER", CLOCK_MONOTONIC around each mark).
#ifndef PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_JOB_TRACES_H_
#define PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_JOB_TRACES_H_

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "podscope/trace_format/clock_model.h"
#include "trace_file.h"

namespace podscope::runtime::testing {

struct RankTrace {
  std::string path;
  int rank = -1;
  int world = 0;
  std::vector<int64_t> local_marks;    // on the file's clock
  std::vector<int64_t> aligned_marks;  // on the reference clock
  std::vector<int64_t> uncertainty;    // of each aligned mark
  trace_format::proto::ClockRecord clock;
  bool complete = false;  // has its index
};

inline std::map<int, RankTrace> ReadRankTraces(const std::string& dir) {
  std::map<int, RankTrace> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".podtrace") continue;
    profiler::testing::TraceFile f =
        profiler::testing::ReadTraceFile(entry.path().string());
    if (f.reader == nullptr) continue;
    RankTrace t;
    t.path = entry.path().string();
    t.rank = f.reader->metadata().process_index();
    t.world = f.reader->metadata().process_count();
    t.clock = f.reader->clock();
    t.complete = f.reader->report().has_index;
    trace_format::ClockModel model(t.clock);
    for (const auto& track : f.tracks) {
      for (const auto& inst : track.events.instants) {
        if (f.Name(inst.name) == "sync_mark")
          t.local_marks.push_back(inst.ts_ns);
      }
    }
    std::sort(t.local_marks.begin(), t.local_marks.end());
    for (int64_t m : t.local_marks) {
      t.aligned_marks.push_back(model.ToReference(m));
      t.uncertainty.push_back(model.UncertaintyAt(m));
    }
    out[t.rank] = std::move(t);
  }
  return out;
}

struct PrintedMark {
  int64_t before = 0;
  int64_t after = 0;
};

// marks[rank][k] from the launchers' output.
inline std::map<int, std::map<int, PrintedMark>> ParseMarks(
    const std::string& out) {
  std::map<int, std::map<int, PrintedMark>> marks;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find("marked ");
    if (at == std::string::npos) continue;
    int r = 0, k = 0;
    long long b = 0, a = 0;
    if (std::sscanf(line.c_str() + at, "marked %d %d %lld %lld", &r, &k, &b,
                    &a) == 4) {
      marks[r][k] = {b, a};
    }
  }
  return marks;
}

// How far `aligned` lies outside [before, after].
inline int64_t OutsideBy(int64_t aligned, const PrintedMark& m) {
  return std::max<int64_t>({m.before - aligned, aligned - m.after, 0});
}

}  // namespace podscope::runtime::testing

#endif  // PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_JOB_TRACES_H_
