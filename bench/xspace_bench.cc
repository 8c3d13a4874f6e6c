// bench/run xspace: how fast XSpace traces open. The XSpace of a
// realistic synthetic trace (16 threads, nested scopes, some arguments and
// counters; 500,000 events) is imported as XProf's files are (no Podscope
// plane info: the foreign mapping), and the figure is compared with two
// references measured in the same run on the same bytes and events: parsing
// the XSpace protobuf alone, and writing the same events natively. Times
// are the benchmark thread's CPU time.
#include <benchmark/benchmark.h>
#include <time.h>

#include <string>

#include "common/headline.h"
#include "common/synthetic_trace.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/writer.h"
#include "podscope/trace_format/xspace.h"

namespace podscope::bench {
namespace {

namespace xp = ::tensorflow::profiler;
constexpr uint64_t kEvents = 500'000;

const SyntheticTrace& Trace() {
  static const SyntheticTrace* trace = [] {
    SyntheticOptions o;
    o.events = kEvents;
    return new SyntheticTrace(GenerateSyntheticTrace(o));
  }();
  return *trace;
}

std::string NativeFile() {
  std::string file;
  auto writer =
      trace_format::TraceWriter::Create(trace_format::MakeStringSink(&file));
  if (!writer.ok()) return "";
  WriteSyntheticTrace(Trace(), writer->get());
  if (!(*writer)->Close().ok()) return "";
  return file;
}

// The XSpace as another profiler would have written it: Podscope's plane
// info stat taken out.
const std::string& ForeignXSpace() {
  static const std::string* bytes = [] {
    auto reader = trace_format::TraceReader::OpenBuffer(NativeFile(), "bench");
    auto space = trace_format::ToXSpace(**reader);
    for (xp::XPlane& p : *space->mutable_planes()) {
      auto* stats = p.mutable_stats();
      for (int i = stats->size() - 1; i >= 0; --i) {
        if (stats->Get(i).has_bytes_value()) stats->DeleteSubrange(i, 1);
      }
    }
    return new std::string(space->SerializeAsString());
  }();
  return *bytes;
}

// This thread's CPU time: the work is single-threaded, and on a shared
// machine wall time would measure the neighbours too.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

void BM_ImportXSpace(benchmark::State& state) {
  const std::string& data = ForeignXSpace();
  const double events = static_cast<double>(Trace().event_count());
  double import_s = 0, parse_s = 0, native_s = 0;
  uint64_t imported = 0;
  for (auto _ : state) {
    const double t0 = ThreadCpuSeconds();
    std::string file;
    auto writer =
        trace_format::TraceWriter::Create(trace_format::MakeStringSink(&file));
    trace_format::XSpaceImportFacts facts;
    facts.source = "bench.xplane.pb";
    auto stats = trace_format::XSpaceToPodtrace(data, facts, **writer);
    if (!stats.ok() || !(*writer)->Close().ok()) {
      state.SkipWithError("import failed");
      return;
    }
    imported = stats->events;
    const double t1 = ThreadCpuSeconds();
    xp::XSpace space;
    benchmark::DoNotOptimize(space.ParseFromString(data));
    const double t2 = ThreadCpuSeconds();
    benchmark::DoNotOptimize(NativeFile().size());
    const double t3 = ThreadCpuSeconds();
    import_s += t1 - t0;
    parse_s += t2 - t1;
    native_s += t3 - t2;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["events"] = events;
  state.counters["imported_events"] = static_cast<double>(imported);
  state.counters["xspace_bytes"] = static_cast<double>(data.size());
  state.counters["import.xspace_events_per_s"] = events * n / import_s;
  state.counters["import.xspace_vs_protobuf_parse"] = import_s / parse_s;
  state.counters["import.xspace_vs_native_write"] = import_s / native_s;
}
BENCHMARK(BM_ImportXSpace)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_ExportXSpace(benchmark::State& state) {
  auto reader = trace_format::TraceReader::OpenBuffer(NativeFile(), "bench");
  const double events = static_cast<double>(Trace().event_count());
  size_t bytes = 0;
  for (auto _ : state) {
    auto space = trace_format::ToXSpace(**reader);
    bytes = space->SerializeAsString().size();
  }
  state.counters["xspace_bytes"] = static_cast<double>(bytes);
  state.counters["export.xspace_events_per_s"] = benchmark::Counter(
      events * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ExportXSpace)->Unit(benchmark::kMillisecond)->MinTime(2.0);

[[maybe_unused]] const bool kRegistered = [] {
  RegisterHeadline("import.xspace_events_per_s", "events/s");
  RegisterHeadline("import.xspace_vs_protobuf_parse", "x");
  RegisterHeadline("import.xspace_vs_native_write", "x");
  RegisterHeadline("export.xspace_events_per_s", "events/s");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
