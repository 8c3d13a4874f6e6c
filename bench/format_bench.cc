// bench/run format: bytes per event on disk, write and read throughput of
// the trace file format on a realistic synthetic trace (16 threads, nested
// scopes 1-8 deep, 1,000 names, some arguments and counters), and bytes per
// event of the most regular trace there is: one thread recording one empty
// scope over and over, timed by the profiler's clock.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/headline.h"
#include "common/synthetic_trace.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"

namespace podscope::bench {
namespace {

constexpr uint64_t kEvents = 4'000'000;

const SyntheticTrace& Trace() {
  static const SyntheticTrace* trace = [] {
    SyntheticOptions o;
    o.events = kEvents;
    return new SyntheticTrace(GenerateSyntheticTrace(o));
  }();
  return *trace;
}

std::string TempPath(const char* what) {
  return (std::filesystem::temp_directory_path() /
          ("podscope-bench-" + std::to_string(getpid()) + "-" + what +
           ".podtrace"))
      .string();
}

uint64_t WriteFile(const std::string& path, int level) {
  trace_format::WriterOptions wo;
  wo.compression_level = level;
  auto writer = trace_format::TraceWriter::Create(path, wo);
  if (!writer.ok()) return 0;
  WriteSyntheticTrace(Trace(), writer->get());
  if (!(*writer)->Close().ok()) return 0;
  return (*writer)->stats().bytes;
}

void BM_FormatWrite(benchmark::State& state) {
  const SyntheticTrace& trace = Trace();
  const std::string path = TempPath("write");
  const int level = static_cast<int>(state.range(0));
  uint64_t bytes = 0;
  for (auto _ : state) {
    bytes = WriteFile(path, level);
    if (bytes == 0) state.SkipWithError("write failed");
  }
  std::filesystem::remove(path);
  const double events = static_cast<double>(trace.event_count());
  state.counters["events"] = events;
  state.counters["bytes_per_event"] = static_cast<double>(bytes) / events;
  state.counters["events_per_s"] = benchmark::Counter(
      events * state.iterations(), benchmark::Counter::kIsRate);
  if (level == 0) {
    state.counters["format.write_uncompressed_events_per_s"] =
        benchmark::Counter(events * state.iterations(),
                           benchmark::Counter::kIsRate);
  }
  if (level == trace_format::WriterOptions().compression_level) {
    state.counters["format.bytes_per_event"] =
        static_cast<double>(bytes) / events;
    state.counters["format.write_events_per_s"] = benchmark::Counter(
        events * state.iterations(), benchmark::Counter::kIsRate);
  }
}
BENCHMARK(BM_FormatWrite)
    ->Arg(0)
    ->Arg(1)
    ->Arg(6)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// Decoding every chunk on both cores: the reader's fast path.
void BM_FormatRead(benchmark::State& state) {
  const std::string path = TempPath("read");
  WriteFile(path, trace_format::WriterOptions().compression_level);
  const int threads = static_cast<int>(state.range(0));
  uint64_t events = 0;
  for (auto _ : state) {
    auto reader = trace_format::TraceReader::Open(path);
    if (!reader.ok()) {
      state.SkipWithError("open failed");
      break;
    }
    std::atomic<uint64_t> n{0};
    (*reader)->ForEachChunk(
        threads, [&](size_t, std::vector<trace_format::TrackEvents>& tracks) {
          uint64_t c = 0;
          for (const auto& t : tracks) c += t.event_count();
          n += c;
        });
    events = n.load();
  }
  std::filesystem::remove(path);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events) * state.iterations(),
                         benchmark::Counter::kIsRate);
  if (threads == 2) {
    state.counters["format.read_events_per_s"] =
        benchmark::Counter(static_cast<double>(events) * state.iterations(),
                           benchmark::Counter::kIsRate);
  }
}
BENCHMARK(BM_FormatRead)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// Reading every track merged across chunks, in reader order with depths:
// what a viewer loads.
void BM_FormatReadMerged(benchmark::State& state) {
  const std::string path = TempPath("merged");
  WriteFile(path, trace_format::WriterOptions().compression_level);
  uint64_t events = 0;
  for (auto _ : state) {
    auto reader = trace_format::TraceReader::Open(path);
    if (!reader.ok()) {
      state.SkipWithError("open failed");
      break;
    }
    events = 0;
    for (const auto& t : (*reader)->ReadAllTracks(2)) events += t.event_count();
  }
  std::filesystem::remove(path);
  state.counters["format.read_merged_events_per_s"] =
      benchmark::Counter(static_cast<double>(events) * state.iterations(),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FormatReadMerged)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// One thread's empty scopes back to back, as the profiler records them:
// two timestamp reads and a store each, converted to nanoseconds with the
// profiler's calibration, handed to the writer in end order.
struct RegularLoop {
  std::vector<std::pair<int64_t, int64_t>> slices;  // start, duration
};

const RegularLoop& Regular() {
  static const RegularLoop* loop = [] {
    constexpr size_t kScopes = 2'000'000;
    const profiler::TickCalibration c = profiler::CalibrateTicks(10);
    std::vector<std::pair<uint64_t, uint64_t>> ticks(kScopes);
    for (auto& t : ticks) {
      t.first = profiler::Ticks();
      benchmark::ClobberMemory();
      t.second = profiler::Ticks();
      benchmark::ClobberMemory();
    }
    auto* out = new RegularLoop;
    out->slices.reserve(kScopes);
    for (const auto& t : ticks) {
      const int64_t start = c.ToNs(t.first);
      out->slices.emplace_back(start, c.ToNs(t.second) - start);
    }
    return out;
  }();
  return *loop;
}

void BM_FormatWriteRegular(benchmark::State& state) {
  const RegularLoop& loop = Regular();
  const std::string path = TempPath("regular");
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto writer = trace_format::TraceWriter::Create(path, {});
    if (!writer.ok()) {
      state.SkipWithError("create failed");
      break;
    }
    trace_format::proto::Track track;
    track.set_kind(trace_format::proto::TRACK_KIND_THREAD);
    track.set_tid(1);
    const uint32_t id = (*writer)->AddTrack(track);
    const uint32_t name = (*writer)->InternString("regular_scope");
    for (const auto& [start, duration] : loop.slices) {
      (*writer)->AddSlice(id, start, duration, name);
    }
    if (!(*writer)->Close().ok()) {
      state.SkipWithError("close failed");
      break;
    }
    bytes = (*writer)->stats().bytes;
  }
  std::filesystem::remove(path);
  const double events = static_cast<double>(loop.slices.size());
  state.counters["format.regular_bytes_per_event"] =
      static_cast<double>(bytes) / events;
  state.counters["format.regular_write_events_per_s"] = benchmark::Counter(
      events * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FormatWriteRegular)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);

const bool kHeadlines = [] {
  RegisterHeadline("format.bytes_per_event", "bytes/event");
  RegisterHeadline("format.write_events_per_s", "events/s");
  RegisterHeadline("format.write_uncompressed_events_per_s", "events/s");
  RegisterHeadline("format.regular_bytes_per_event", "bytes/event");
  RegisterHeadline("format.regular_write_events_per_s", "events/s");
  RegisterHeadline("format.read_events_per_s", "events/s");
  RegisterHeadline("format.read_merged_events_per_s", "events/s");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
