// bench/run format: bytes per event on disk, write and read throughput of
// the trace file format on a realistic synthetic trace (16 threads, nested
// scopes 1-8 deep, 1,000 names, some arguments and counters), bytes per
// event of the most regular trace there is: one thread recording one empty
// scope over and over, timed by the profiler's clock, and what `podscope
// check` costs on hostile files (tests/trace_format/damaged_files.h).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/headline.h"
#include "common/synthetic_trace.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"
// Header-only, shared with the tests and the large-input fuzz check.
#include "../tests/trace_format/damaged_files.h"

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

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
int64_t ProcStatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      return std::stoll(line.substr(field.size() + 1)) * 1024;
    }
  }
  return -1;
}

// Resets the peak resident size to the current one (Linux 4.0+).
bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

// What `podscope check` does with a file (tools/src/check_command.cc):
// open it verifying every record, decode every chunk on every core, read
// the report.
uint64_t CheckFile(const std::string& path) {
  trace_format::ReaderOptions options;
  options.verify_all = true;
  auto reader = trace_format::TraceReader::Open(path, options);
  if (!reader.ok()) return 0;
  std::atomic<uint64_t> events{0};
  (*reader)->ForEachChunk(
      0, [&](size_t, std::vector<trace_format::TrackEvents>& tracks) {
        for (const auto& t : tracks) events += t.event_count();
      });
  return events.load() + (*reader)->report().skipped.size();
}

// `podscope check` on each kind of hostile file of 33 MiB: the slowest
// rate over the kinds (the best of the repetitions for each), and the
// largest peak of resident memory (the mapped file included) over the
// file's size.
void BM_ReaderAdversarial(benchmark::State& state) {
  constexpr size_t kSize = 33u << 20;
  std::vector<std::string> paths;
  for (trace_format::testing::DamageKind kind :
       trace_format::testing::kAllDamageKinds) {
    const std::string path =
        TempPath(trace_format::testing::DamageKindName(kind));
    std::ofstream(path, std::ios::binary)
        << trace_format::testing::MakeDamagedFile(kind, kSize);
    paths.push_back(path);
  }
  std::vector<double> best(paths.size(), 1e300);
  std::vector<double> best_cpu(paths.size(), 1e300);
  std::vector<double> ratio(paths.size(), 0);
  for (auto _ : state) {
    for (size_t i = 0; i < paths.size(); ++i) {
      malloc_trim(0);
      const bool peak_known = ResetPeakRss();
      const int64_t before = ProcStatusBytes("VmRSS");
      const double cpu0 = ProcessCpuSeconds();
      const auto t0 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(CheckFile(paths[i]));
      const std::chrono::duration<double> took =
          std::chrono::steady_clock::now() - t0;
      best[i] = std::min(best[i], took.count());
      best_cpu[i] = std::min(best_cpu[i], ProcessCpuSeconds() - cpu0);
      if (peak_known) {
        ratio[i] = std::max(
            ratio[i],
            static_cast<double>(ProcStatusBytes("VmHWM") - before) / kSize);
      }
    }
  }
  for (const std::string& p : paths) std::filesystem::remove(p);
  double slowest = 1e300, worst_ratio = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    const double mb_per_s = kSize / 1e6 / best[i];
    const std::string kind = trace_format::testing::DamageKindName(
        trace_format::testing::kAllDamageKinds[i]);
    state.counters["mb_per_s." + kind] = mb_per_s;
    // The same work per second of processor time, for a busy machine.
    state.counters["cpu_mb_per_s." + kind] = kSize / 1e6 / best_cpu[i];
    state.counters["peak_rss_ratio." + kind] = ratio[i];
    slowest = std::min(slowest, mb_per_s);
    worst_ratio = std::max(worst_ratio, ratio[i]);
  }
  state.counters["reader.adversarial_mb_per_s"] = slowest;
  state.counters["reader.adversarial_peak_rss_ratio"] = worst_ratio;
}
BENCHMARK(BM_ReaderAdversarial)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

const bool kHeadlines = [] {
  RegisterHeadline("format.bytes_per_event", "bytes/event");
  RegisterHeadline("format.write_events_per_s", "events/s");
  RegisterHeadline("format.write_uncompressed_events_per_s", "events/s");
  RegisterHeadline("format.regular_bytes_per_event", "bytes/event");
  RegisterHeadline("format.regular_write_events_per_s", "events/s");
  RegisterHeadline("format.read_events_per_s", "events/s");
  RegisterHeadline("format.read_merged_events_per_s", "events/s");
  // Goals: at least 50 MB/s, at most 4.
  RegisterHeadline("reader.adversarial_mb_per_s", "MB/s");
  RegisterHeadline("reader.adversarial_peak_rss_ratio", "x");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
