// bench/run interop: importing Chrome trace JSON (a generated PyTorch
// profiler / Kineto-like trace, uncompressed, on one core) and exporting to
// Perfetto's protobuf format, each beside a reference measured in the same
// run: simdjson's own on-demand pass over the same text (reading it and
// visiting each event's phase, converting nothing) and the Chrome JSON
// export of the same podtrace. Rates are per CPU second of the one thread
// doing the work. Also the peak RSS of importing a ~300 MB file.
#include <benchmark/benchmark.h>
#include <simdjson.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "common/headline.h"
#include "common/synthetic_trace.h"
#include "podscope/trace_format/chrome_export.h"
#include "podscope/trace_format/chrome_import.h"
#include "podscope/trace_format/perfetto_export.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"

namespace podscope::bench {
namespace {

namespace fs = std::filesystem;

fs::path TempPath(const std::string& what) {
  return fs::temp_directory_path() /
         ("podscope-bench-interop-" + std::to_string(getpid()) + "-" + what);
}

// About `target_bytes` of Kineto-shaped events: host ops nested on two
// threads, kernel launches with correlation ids, kernels on four GPU
// streams.
struct KinetoJson {
  std::string path;
  uint64_t bytes = 0;
  uint64_t events = 0;
};

KinetoJson WriteKinetoJson(const std::string& name, uint64_t target_bytes) {
  KinetoJson json;
  KinetoJson* j = &json;
  {
    j->path = TempPath(name).string();
    std::ofstream out(j->path, std::ios::binary);
    std::string b =
        "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", "
        "\"rank\": 0, \"world_size\": 8}, \"traceEvents\": [\n";
    std::mt19937_64 rng(1);
    const char* ops[] = {"aten::mm", "aten::add", "aten::relu", "aten::copy_",
                         "autograd::engine::evaluate_function: MmBackward0"};
    uint64_t ts = 1682725898000000ull;
    uint64_t correlation = 1000;
    bool first = true;
    auto sep = [&] {
      if (!first) b.append(",\n");
      first = false;
    };
    while (j->bytes + b.size() < target_bytes) {
      const int tid = 4037 + static_cast<int>(rng() % 2);
      const uint64_t dur = 20 + rng() % 200;
      sep();
      b += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"";
      b += ops[rng() % 5];
      b += "\", \"pid\": 4037, \"tid\": " + std::to_string(tid) +
           ", \"ts\": " + std::to_string(ts) +
           ", \"dur\": " + std::to_string(dur) +
           ".0, \"args\": {\"External id\": " + std::to_string(rng() % 100000) +
           ", \"Input Dims\": [[2048, 1], []], \"Input type\": [\"float\", "
           "\"Scalar\"]}}";
      sep();
      b += "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
           "\"cudaLaunchKernel\", \"pid\": 4037, \"tid\": " +
           std::to_string(tid) + ", \"ts\": " + std::to_string(ts + 2) +
           ", \"dur\": 8.5, \"args\": {\"cbid\": 211, \"correlation\": " +
           std::to_string(correlation) + "}}";
      sep();
      b += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void "
           "gemm_kernel<float, 128>(float const*, float*)\", \"pid\": 0, "
           "\"tid\": " +
           std::to_string(7 + rng() % 4) +
           ", \"ts\": " + std::to_string(ts + 12) +
           ".125, \"dur\": " + std::to_string(dur / 2) +
           ".25, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": " +
           std::to_string(correlation) +
           ", \"grid\": [2400, 1, 1], \"block\": [256, 1, 1], "
           "\"est. achieved occupancy %\": 100}}";
      ++correlation;
      j->events += 3;
      ts += dur + 5;
      if (b.size() > (1u << 20)) {
        out << b;
        j->bytes += b.size();
        b.clear();
      }
    }
    b += "\n]}\n";
    out << b;
    j->bytes += b.size();
  }
  return json;
}

const KinetoJson& Json() {
  static const KinetoJson* json =
      new KinetoJson(WriteKinetoJson("kineto.json", uint64_t{64} << 20));
  return *json;
}

void BM_ImportChromeJson(benchmark::State& state) {
  const KinetoJson& json = Json();
  const fs::path out = TempPath("import-out");
  uint64_t events = 0;
  for (auto _ : state) {
    auto result =
        trace_format::ImportChromeJsonFiles({json.path}, out.string());
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    events = result->events;
  }
  fs::remove_all(out);
  state.counters["events"] = static_cast<double>(events);
  state.counters["import.chrome_json_mb_per_s"] = benchmark::Counter(
      static_cast<double>(json.bytes) / 1e6 * state.iterations(),
      benchmark::Counter::kIsRate);
  state.counters["import.chrome_json_events_per_s"] =
      benchmark::Counter(static_cast<double>(events) * state.iterations(),
                         benchmark::Counter::kIsRate);
}
// Rates are per CPU second of the (single) importing thread: the figure
// for one core, whatever else the machine runs.
BENCHMARK(BM_ImportChromeJson)->Unit(benchmark::kMillisecond)->Iterations(3);

// Run as a child of BM_ImportChromeJsonPeakRss (the variable names the
// input): imports it and exits before main, so that the child's peak RSS is
// the import's alone.
constexpr char kImportOnlyVariable[] = "PODSCOPE_BENCH_IMPORT_ONLY";
const bool kImportOnly = [] {
  const char* input = std::getenv(kImportOnlyVariable);
  if (input == nullptr) return false;
  auto result =
      trace_format::ImportChromeJsonFiles({input}, std::string(input) + ".out");
  std::error_code ec;
  fs::remove_all(std::string(input) + ".out", ec);
  std::_Exit(result.ok() ? 0 : 1);
}();

// Peak resident memory of importing a ~300 MB Kineto-like file, measured
// as the maximum RSS of a fresh process that does only that.
void BM_ImportChromeJsonPeakRss(benchmark::State& state) {
  const KinetoJson json =
      WriteKinetoJson("kineto-large.json", uint64_t{300} << 20);
  double peak_mb = 0;
  for (auto _ : state) {
    const pid_t child = fork();
    if (child == 0) {
      setenv(kImportOnlyVariable, json.path.c_str(), 1);
      execl("/proc/self/exe", "bench_interop", static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    int status = 0;
    rusage usage{};
    if (child < 0 || wait4(child, &status, 0, &usage) != child ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("the importing child failed");
      break;
    }
    peak_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB
  }
  fs::remove(json.path);
  state.counters["input_mb"] = static_cast<double>(json.bytes) / 1e6;
  state.counters["events"] = static_cast<double>(json.events);
  state.counters["import.chrome_json_peak_rss_mb"] = peak_mb;
}
BENCHMARK(BM_ImportChromeJsonPeakRss)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

// The reference: simdjson reads the same file and visits every event's
// phase, converting nothing. Like the importer, it reuses its buffer and
// its parser from one pass to the next, and one untimed pass warms them.
bool ReadInto(const std::string& path, simdjson::padded_string* text) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  const size_t n = std::fread(text->data(), 1, text->size(), f);
  std::fclose(f);
  return n == text->size();
}

uint64_t CountPhases(simdjson::ondemand::parser& parser,
                     const simdjson::padded_string& text, bool* ok) {
  simdjson::ondemand::document doc;
  simdjson::ondemand::array array;
  *ok = !parser.iterate(text).get(doc) &&
        !doc["traceEvents"].get_array().get(array);
  uint64_t events = 0;
  if (!*ok) return 0;
  for (auto e : array) {
    std::string_view ph;
    if (!e["ph"].get_string().get(ph)) ++events;
  }
  return events;
}

void BM_ReferenceSimdjsonPass(benchmark::State& state) {
  const KinetoJson& json = Json();
  simdjson::padded_string text(static_cast<size_t>(json.bytes));
  simdjson::ondemand::parser parser;
  bool ok = ReadInto(json.path, &text);
  if (ok) CountPhases(parser, text, &ok);
  if (!ok) {
    state.SkipWithError("the reference could not read or parse the file");
    return;
  }
  uint64_t events = 0;
  for (auto _ : state) {
    if (!ReadInto(json.path, &text)) {
      state.SkipWithError("load failed");
      break;
    }
    events = CountPhases(parser, text, &ok);
    if (!ok) {
      state.SkipWithError("parse failed");
      break;
    }
    benchmark::DoNotOptimize(events);
  }
  state.counters["import.reference_simdjson_mb_per_s"] = benchmark::Counter(
      static_cast<double>(json.bytes) / 1e6 * state.iterations(),
      benchmark::Counter::kIsRate);
}

BENCHMARK(BM_ReferenceSimdjsonPass)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

const std::string& Podtrace() {
  static const std::string* path = [] {
    auto* p = new std::string(TempPath("export.podtrace").string());
    SyntheticOptions o;
    o.events = 1'000'000;
    const SyntheticTrace trace = GenerateSyntheticTrace(o);
    auto writer = trace_format::TraceWriter::Create(*p);
    if (writer.ok()) {
      WriteSyntheticTrace(trace, writer->get());
      (void)(*writer)->Close();
    }
    return p;
  }();
  return *path;
}

template <bool kPerfetto>
void BM_Export(benchmark::State& state) {
  auto reader = trace_format::TraceReader::Open(Podtrace());
  if (!reader.ok()) {
    state.SkipWithError("open failed");
    return;
  }
  const trace_format::TraceReader* readers[] = {reader->get()};
  const std::string out =
      TempPath(kPerfetto ? "out.pftrace" : "out.json").string();
  uint64_t events = 0;
  for (auto _ : state) {
    if constexpr (kPerfetto) {
      auto stats = trace_format::ExportPerfetto(readers, out);
      if (!stats.ok()) {
        state.SkipWithError("export failed");
        break;
      }
      events = stats->events;
    } else {
      auto stats = trace_format::ExportChrome(readers, out);
      if (!stats.ok()) {
        state.SkipWithError("export failed");
        break;
      }
      events = stats->events;
    }
  }
  fs::remove(out);
  state.counters[kPerfetto ? "export.perfetto_events_per_s"
                           : "export.reference_chrome_json_events_per_s"] =
      benchmark::Counter(static_cast<double>(events) * state.iterations(),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Export<true>)
    ->Name("BM_ExportPerfetto")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_Export<false>)
    ->Name("BM_ExportChromeJsonReference")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

const bool kHeadlines = [] {
  RegisterHeadline("import.chrome_json_mb_per_s", "MB/s");
  RegisterHeadline("import.reference_simdjson_mb_per_s", "MB/s");
  RegisterHeadline("import.chrome_json_peak_rss_mb", "MB");
  RegisterHeadline("export.perfetto_events_per_s", "events/s");
  RegisterHeadline("export.reference_chrome_json_events_per_s", "events/s");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
