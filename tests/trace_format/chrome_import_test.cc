// Chrome trace JSON / Kineto import: hand-written documents exercising
// every phase, gzip, unmatched B/E and malformed input, and two ranks of a
// real PyTorch profiler run, each checked by reading the podtrace files
// written with the project's own reader.
#include "podscope/trace_format/chrome_import.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "podscope/trace_format/reader.h"

namespace podscope::trace_format {
namespace {

namespace fs = std::filesystem;

class ChromeImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("podscope-chrome-import-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text,
                    bool gzip = false) {
    const std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile gz = gzopen(path.c_str(), "wb");
      gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
      gzclose(gz);
    } else {
      std::ofstream(path, std::ios::binary) << text;
    }
    return path;
  }

  // Imports one document and opens the file written.
  std::unique_ptr<TraceReader> Import(const std::string& text,
                                      bool gzip = false,
                                      ChromeImportResult* result = nullptr) {
    const std::string in = Write(gzip ? "in.json.gz" : "in.json", text, gzip);
    auto imported = ImportChromeJsonFiles({in}, (dir_ / "out").string());
    EXPECT_TRUE(imported.ok()) << imported.status();
    if (!imported.ok()) return nullptr;
    EXPECT_EQ(imported->paths.size(), 1u);
    if (result != nullptr) *result = *imported;
    auto reader = TraceReader::Open(imported->paths[0]);
    EXPECT_TRUE(reader.ok()) << reader.status();
    return reader.ok() ? std::move(*reader) : nullptr;
  }

  absl::Status ImportError(const std::string& text) {
    const std::string in = Write("bad.json", text);
    auto imported = ImportChromeJsonFiles({in}, (dir_ / "bad-out").string());
    if (imported.ok()) return absl::OkStatus();
    // Nothing is left behind for a file that failed.
    EXPECT_TRUE(!fs::exists(dir_ / "bad-out") ||
                fs::is_empty(dir_ / "bad-out"));
    return imported.status();
  }

  fs::path dir_;
};

const proto::Track* TrackNamed(const TraceReader& r, std::string_view name) {
  for (const proto::Track& t : r.tracks()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

std::string ArgText(const TraceReader& r, const TrackEvents& e, EventKind kind,
                    uint32_t index, std::string_view key) {
  const EventArgs* args = e.FindArgs(kind, index);
  if (args == nullptr) return "<none>";
  for (const Arg& a : args->args) {
    if (r.GetString(a.key) != key) continue;
    if (const auto* i = std::get_if<int64_t>(&a.value))
      return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&a.value)) {
      std::ostringstream os;
      os << *d;
      return os.str();
    }
    return std::string(r.GetString(std::get<StringId>(a.value).id));
  }
  return "<missing>";
}

constexpr char kEveryPhase[] = R"({
  "displayTimeUnit": "ns",
  "otherData": {"version": "test"},
  "traceEvents": [
    {"ph": "M", "pid": 7, "tid": 0, "name": "process_name", "args": {"name": "trainer"}},
    {"ph": "M", "pid": 7, "tid": 1, "name": "thread_name", "args": {"name": "main"}},
    {"ph": "X", "pid": 7, "tid": 1, "ts": 1000.5, "dur": 100.25, "name": "step",
     "cat": "cpu_op", "args": {"i": -3, "f": 2.5, "s": "text", "b": true, "n": null, "a": [1, 2], "o": {"k": 1}}},
    {"ph": "B", "pid": 7, "tid": 1, "ts": 1010, "name": "inner"},
    {"ph": "E", "pid": 7, "tid": 1, "ts": 1020.001, "args": {"end_arg": 1}},
    {"ph": "i", "pid": 7, "tid": 1, "ts": 1030, "name": "mark", "s": "t"},
    {"ph": "I", "pid": 7, "tid": 1, "ts": 1031, "name": "global mark", "s": "g"},
    {"ph": "C", "pid": 7, "ts": 1040, "name": "memory", "args": {"used": 10, "free": "20.5"}},
    {"ph": "C", "pid": 7, "ts": 1050, "name": "memory", "args": {"used": 12, "free": 18}},
    {"ph": "X", "pid": 7, "tid": 2, "ts": 1060, "dur": 5, "name": "producer"},
    {"ph": "s", "pid": 7, "tid": 2, "ts": 1061, "id": 42, "cat": "q", "name": "f"},
    {"ph": "X", "pid": 7, "tid": 1, "ts": 1070, "dur": 5, "name": "consumer"},
    {"ph": "f", "pid": 7, "tid": 1, "ts": 1071, "id": 42, "cat": "q", "name": "f", "bp": "e"},
    {"ph": "P", "pid": 7, "tid": 1, "ts": 1080, "name": "sample"}
  ]
})";

TEST_F(ChromeImportTest, EveryPhaseBecomesTheEventsAUserSees) {
  ChromeImportResult result;
  auto r = Import(kEveryPhase, false, &result);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->metadata().pid(), 7);
  EXPECT_EQ(r->metadata().process_index(), 0);
  EXPECT_EQ(r->metadata().process_count(), 1);
  ASSERT_EQ(r->metadata().command_line_size(), 1);
  EXPECT_EQ(r->metadata().command_line(0), "trainer");
  EXPECT_EQ(r->metadata().attributes().at("json.displayTimeUnit"), "ns");
  // The unconverted sample is reported, not silently dropped.
  EXPECT_NE(r->metadata().attributes().at("import.warnings").find("phase 'P'"),
            std::string::npos);
  ASSERT_FALSE(result.warnings.empty());

  const proto::Track* main = TrackNamed(*r, "main");
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->kind(), proto::TRACK_KIND_THREAD);
  EXPECT_EQ(main->tid(), 1);
  TrackEvents e = r->ReadTrack(main->id());
  ASSERT_EQ(e.slices.size(), 3u);
  // Microseconds with fractions keep nanosecond precision.
  EXPECT_EQ(e.slices[0].start_ns, 1000500);
  EXPECT_EQ(e.slices[0].duration_ns, 100250);
  EXPECT_EQ(r->GetString(e.slices[0].name), "step");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "category"), "cpu_op");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "i"), "-3");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "f"), "2.5");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "s"), "text");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "b"), "1");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "n"), "null");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "a"), "[1, 2]");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "o"), "{\"k\": 1}");
  // B/E: one slice, nested in "step", with the E's args.
  EXPECT_EQ(r->GetString(e.slices[1].name), "inner");
  EXPECT_EQ(e.slices[1].start_ns, 1010000);
  EXPECT_EQ(e.slices[1].duration_ns, 10001);
  EXPECT_EQ(e.slices[1].depth, 1u);
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 1, "end_arg"), "1");
  ASSERT_EQ(e.instants.size(), 1u);
  EXPECT_EQ(r->GetString(e.instants[0].name), "mark");
  EXPECT_EQ(e.instants[0].ts_ns, 1030000);

  const proto::Track* global = TrackNamed(*r, "global instants");
  ASSERT_NE(global, nullptr);
  EXPECT_EQ(r->ReadTrack(global->id()).instants.size(), 1u);

  const proto::Track* used = TrackNamed(*r, "memory used");
  const proto::Track* free = TrackNamed(*r, "memory free");
  ASSERT_NE(used, nullptr);
  ASSERT_NE(free, nullptr);
  EXPECT_EQ(used->kind(), proto::TRACK_KIND_COUNTER);
  TrackEvents c = r->ReadTrack(free->id());
  ASSERT_EQ(c.counters.size(), 2u);
  EXPECT_EQ(c.counters[0].value, 20.5);
  EXPECT_EQ(c.counters[1].ts_ns, 1050000);

  // The flow from "producer" (tid 2) arrives at "consumer" (tid 1).
  const proto::Track* producer_track = TrackNamed(*r, "thread 2");
  ASSERT_NE(producer_track, nullptr);
  TrackEvents p = r->ReadTrack(producer_track->id());
  ASSERT_EQ(p.flows.size(), 1u);
  EXPECT_EQ(p.flows[0].phase, FlowPhase::kBegin);
  ASSERT_EQ(e.flows.size(), 1u);
  EXPECT_EQ(e.flows[0].phase, FlowPhase::kEnd);
  EXPECT_EQ(e.flows[0].flow_id, p.flows[0].flow_id);
  EXPECT_EQ(r->GetString(e.slices[e.flows[0].index].name), "consumer");
}

TEST_F(ChromeImportTest, GzipAndBareArrayWithoutClosingBracket) {
  // The format allows a bare array whose ']' is missing (a trace cut off
  // by a crashing browser), here gzipped.
  auto r = Import(
      "[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":1,\"name\":\"a\"},\n"
      " {\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":\"6.5\",\"dur\":1,\"name\":"
      "\"b\"},",
      /*gzip=*/true);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->known_event_count(), 2u);
  TrackEvents e = r->ReadTrack(r->tracks()[0].id());
  ASSERT_EQ(e.slices.size(), 2u);
  EXPECT_EQ(e.slices[1].start_ns, 6500);
}

TEST_F(ChromeImportTest, EscapesAndEventsAcrossReadBlocks) {
  // Quotes and backslashes inside strings, and events that straddle the
  // importer's 1 MiB read blocks (a 3 MB argument among them).
  std::string text = "{\"traceEvents\": [";
  const int kEvents = 3000;
  for (int i = 0; i < kEvents; ++i) {
    if (i > 0) text += ",\n";
    text +=
        "{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": " +
        std::to_string(i * 10) +
        ", \"dur\": 5, \"name\": \"q\\\"uote\\\\\", \"args\": {\"pad\": \"" +
        std::string(i == 1500 ? 3000000 : 500 + i % 7, 'x') + "\\\\\"}}";
  }
  text += "], \"after\": \"end\\\"\"}";
  auto r = Import(text);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->known_event_count(), static_cast<uint64_t>(kEvents));
  TrackEvents e = r->ReadTrack(r->tracks()[0].id());
  ASSERT_EQ(e.slices.size(), static_cast<size_t>(kEvents));
  EXPECT_EQ(r->GetString(e.slices[0].name), "q\"uote\\");
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 1500, "pad"),
            std::string(3000000, 'x') + "\\");
  EXPECT_EQ(r->metadata().attributes().at("json.after"), "end\"");
}

TEST_F(ChromeImportTest, MemberNamesThatAreNotUtf8KeepTheMetadataReadable) {
  // Attribute keys are proto strings: invalid UTF-8 there would make the
  // whole metadata record unreadable.
  auto r = Import(
      "{\"a\xff\xfe\": \"v\", \"traceEvents\": [{\"ph\": \"X\", \"pid\": "
      "1, "
      "\"tid\": 1, \"ts\": 1, \"dur\": 1, \"name\": \"n\"}]}");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->metadata().pid(), 1);
  EXPECT_EQ(r->metadata().attributes().at("json.a__"), "v");
  EXPECT_EQ(r->known_event_count(), 1u);
}

TEST_F(ChromeImportTest, UnmatchedBeginAndEndAreKeptAndReported) {
  ChromeImportResult result;
  auto r = Import(R"([
    {"ph": "E", "pid": 1, "tid": 1, "ts": 1, "name": "orphan end"},
    {"ph": "B", "pid": 1, "tid": 1, "ts": 2, "name": "never ends"},
    {"ph": "X", "pid": 1, "tid": 1, "ts": 3, "dur": 7, "name": "last"}
  ])",
                  false, &result);
  ASSERT_NE(r, nullptr);
  TrackEvents e = r->ReadTrack(r->tracks()[0].id());
  ASSERT_EQ(e.slices.size(), 2u);
  EXPECT_EQ(r->GetString(e.slices[0].name), "never ends");
  // Closed at the end of the trace (the end of "last").
  EXPECT_EQ(e.slices[0].end_ns(), 10000);
  EXPECT_EQ(ArgText(*r, e, EventKind::kSlice, 0, "unclosed"), "1");
  ASSERT_EQ(e.instants.size(), 1u);
  EXPECT_EQ(r->GetString(e.instants[0].name), "orphan end");
  std::string all;
  for (const std::string& w : result.warnings) all += w + "\n";
  EXPECT_NE(all.find("1 B event(s) without a matching E"), std::string::npos)
      << all;
  EXPECT_NE(all.find("1 E event(s) without a matching B"), std::string::npos)
      << all;
}

TEST_F(ChromeImportTest, OverlappingSlicesGoToExtraTracks) {
  auto r = Import(R"([
    {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "name": "a"},
    {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 20, "name": "parent after child"},
    {"ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": 10, "name": "b"},
    {"ph": "X", "pid": 1, "tid": 1, "ts": 12, "dur": 2, "name": "in b"}
  ])");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->known_event_count(), 4u);
  const proto::Track* first = TrackNamed(*r, "thread 1");
  const proto::Track* second = TrackNamed(*r, "thread 1 (overlap 2)");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  TrackEvents e1 = r->ReadTrack(first->id());
  TrackEvents e2 = r->ReadTrack(second->id());
  // "a" nests in the parent written after it; "b" crosses "a"'s end.
  ASSERT_EQ(e1.slices.size(), 3u);
  EXPECT_EQ(r->GetString(e1.slices[0].name), "parent after child");
  EXPECT_EQ(r->GetString(e1.slices[1].name), "a");
  EXPECT_EQ(r->GetString(e1.slices[2].name), "in b");
  ASSERT_EQ(e2.slices.size(), 1u);
  EXPECT_EQ(r->GetString(e2.slices[0].name), "b");
}

TEST_F(ChromeImportTest, IdsBeyondSixtyFourBitsStayDistinct) {
  // Numbers no int64 holds are ids by their spelling: two such threads
  // stay two, and nothing is lost.
  auto r = Import(R"([
    {"ph": "X", "pid": 1, "tid": 7.77778e+45, "ts": 0, "dur": 10, "name": "a"},
    {"ph": "X", "pid": 1, "tid": -1e300, "ts": 0, "dur": 10, "name": "b"},
    {"ph": "X", "pid": 1, "tid": 7.77778e+45, "ts": 20, "dur": 10, "name": "c"}
  ])");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->known_event_count(), 3u);
  size_t with_slices = 0;
  for (const proto::Track& t : r->tracks()) {
    const size_t n = r->ReadTrack(t.id()).slices.size();
    if (n > 0) {
      ++with_slices;
      EXPECT_TRUE(n == 1 || n == 2) << t.name();
    }
  }
  EXPECT_EQ(with_slices, 2u);
}

TEST_F(ChromeImportTest, MalformedInputIsAClearErrorWithTheByteOffset) {
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {"", "the file is empty"},
      {"hello", "byte 0: not a JSON trace"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1",
       "the file ends inside the value that starts at byte 17"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1}",
       "\"traceEvents\" array"},
      {"{\"traceEvents\": {}}", "\"traceEvents\" is not an array"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"ts\": {\"a\": 1}}]}",
       "byte 17: event: \"ts\" is not a number of microseconds"},
      {"{\"traceEvents\": [{\"ph\": 5}]}", "\"ph\" is not a string"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"args\": 3}]}",
       "\"args\" is not an object"},
      {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"no ts\"}]}",
       "event \"no ts\" (ph 'X') has no \"ts\""},
      {"{\"traceEvents\": [1]}", "is not an object"},
      {"{\"traceEvents\": [{\"ph\": \"X\" \"ts\": 1}]}", "byte 17: event"},
      {"[{\"ph\":\"X\",\"ts\":1} {\"ph\":\"X\",\"ts\":1}]",
       "byte 19: expected ',' or ']'"},
      {"{\"traceEvents\": []} trailing",
       "unexpected text after the JSON object"},
      {"{\"distributedInfo\": {\"rank\": -1}, \"traceEvents\": []}",
       "\"rank\" is not a non-negative integer"},
  };
  for (const Case& c : cases) {
    absl::Status s = ImportError(c.text);
    EXPECT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.message().find("bad.json"), std::string::npos) << s;
    EXPECT_NE(s.message().find(c.expected), std::string::npos)
        << "input: " << c.text << "\nerror: " << s;
  }
  // A gzip stream cut short is damage, not an empty document.
  std::string whole;
  {
    const std::string path =
        Write("cut.json.gz", std::string(kEveryPhase), true);
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    whole = ss.str();
  }
  const std::string cut =
      Write("cut2.json.gz", "");  // replaced below with the first half
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() / 2);
  auto imported = ImportChromeJsonFiles({cut}, (dir_ / "cut-out").string());
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("cut2.json.gz"), std::string::npos)
      << imported.status();
}

TEST_F(ChromeImportTest, ABadFileAmongGoodOnesIsReportedOrFailsTheImport) {
  const std::string good = Write(
      "good.json", "[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]");
  const std::string bad = Write("broken.json", "{\"traceEvents\": [{]}");
  // Without a handler, the import fails and leaves nothing behind.
  auto failed = ImportChromeJsonFiles({good, bad}, (dir_ / "all").string());
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("broken.json: byte 17"),
            std::string::npos)
      << failed.status();
  EXPECT_TRUE(fs::is_empty(dir_ / "all"));
  // With one, the good file is imported and the bad one reported.
  std::vector<std::string> reported;
  ChromeImportOptions options;
  options.on_file_error = [&](const std::string& file, const absl::Status& s) {
    reported.push_back(file + " | " + std::string(s.message()));
  };
  auto some =
      ImportChromeJsonFiles({good, bad, (dir_ / "missing.json").string()},
                            (dir_ / "some").string(), options);
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(some->paths.size(), 1u);
  ASSERT_EQ(reported.size(), 2u);
  EXPECT_EQ(reported[0].rfind(bad, 0), 0u) << reported[0];
  EXPECT_NE(reported[1].find("missing.json: cannot open"), std::string::npos)
      << reported[1];
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir_ / "some")) {
    EXPECT_EQ(entry.path().extension(), ".podtrace") << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

// ------------------------------------------------------------------ Kineto

fs::path KinetoDir() { return fs::path(PODSCOPE_SHARED_DATA) / "kineto"; }

struct JsonCounts {
  int rank = -1;
  size_t complete = 0;    // "X"
  size_t gpu = 0;         // X on GPU streams (kernel, memcpy, memset)
  size_t correlated = 0;  // X with args.correlation > 0 of those kinds
};

// An independent count, with simdjson's DOM API, of the document.
JsonCounts CountJson(const fs::path& path) {
  JsonCounts counts;
  std::string text;
  gzFile gz = gzopen(path.c_str(), "rb");
  char buf[65536];
  int n;
  while ((n = gzread(gz, buf, sizeof(buf))) > 0) text.append(buf, n);
  gzclose(gz);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  counts.rank = static_cast<int>(int64_t(doc["distributedInfo"]["rank"]));
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    if (std::string_view(e["ph"]) != "X") continue;
    ++counts.complete;
    std::string_view cat;
    if (e["cat"].get(cat)) continue;
    const bool gpu =
        cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
    const bool launch = cat == "cuda_runtime";
    counts.gpu += gpu;
    int64_t correlation = 0;
    if ((gpu || launch) && !e["args"]["correlation"].get(correlation) &&
        correlation > 0) {
      counts.correlated += 1;
    }
  }
  return counts;
}

// A Kineto trace of one rank whose wall clock is the true time plus
// `skew_us`: 30 NCCL all-reduce kernels ending at common true instants
// (within +-1 us), and a compute kernel before each.
std::string KinetoRank(int rank, int64_t skew_us, int kernels) {
  constexpr int64_t kTrueBaseUs = 1'700'000'000'000'000;
  std::string events;
  for (int k = 0; k < kernels; ++k) {
    const int64_t end_us = kTrueBaseUs + skew_us + int64_t{k + 1} * 5000 +
                           ((k * 7 + rank) % 3 - 1);
    if (!events.empty()) events += ",";
    events += absl::StrCat(
        R"({"ph":"X","cat":"kernel","name":"volta_sgemm_128x64_nn",)",
        R"("pid":0,"tid":7,"ts":)", end_us - 900, R"(,"dur":300,)",
        R"("args":{"device":0,"stream":7,"correlation":)", 100 + 2 * k, "}}");
    events += absl::StrCat(
        R"(,{"ph":"X","cat":"kernel",)",
        R"j("name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",)j",
        R"("pid":0,"tid":7,"ts":)", end_us - 400, R"(,"dur":400,)",
        R"("args":{"device":0,"stream":7,"correlation":)", 101 + 2 * k, "}}");
  }
  return absl::StrCat(
      R"({"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":)", rank,
      R"(,"world_size":3},"traceEvents":[)", events, "]}");
}

// Kineto's ranks stamp their events with their own wall clocks. A run of
// several ranks is lined up by the NCCL kernels every rank ran, the first
// rank's clock the reference, within an uncertainty that holds the truth.
TEST_F(ChromeImportTest, KinetoRanksLineUpByTheirNcclKernels) {
  const std::vector<int64_t> skew_us = {0, 2500, -1300};
  std::vector<std::string> files;
  for (int r = 0; r < 3; ++r) {
    files.push_back(Write(absl::StrCat("rank-", r, ".json"),
                          KinetoRank(r, skew_us[r], 30)));
  }
  auto imported = ImportChromeJsonFiles(files, (dir_ / "out").string());
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->paths.size(), 3u);
  for (const std::string& path : imported->paths) {
    auto reader = TraceReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    const int rank = (*reader)->metadata().process_index();
    ASSERT_EQ((*reader)->clock().offsets_size(), 1) << path;
    const proto::ClockOffset& o = (*reader)->clock().offsets(0);
    EXPECT_EQ(o.reference(), "rank0 (by collectives)");
    const int64_t error = o.offset_ns() + skew_us[rank] * 1000;
    EXPECT_LE(std::llabs(error), o.uncertainty_ns())
        << "rank " << rank << " understates its uncertainty";
    EXPECT_LE(o.uncertainty_ns(), 10'000) << "rank " << rank;
  }
  // One rank with kernels that match nothing (different collectives, not
  // the same count): no alignment is claimed, the wall clocks stand.
  std::vector<std::string> mixed = {files[0], files[1],
                                    Write("rank-2b.json", KinetoRank(2, 0, 2))};
  auto kept = ImportChromeJsonFiles(mixed, (dir_ / "kept").string());
  ASSERT_TRUE(kept.ok()) << kept.status();
  for (const std::string& path : kept->paths) {
    auto reader = TraceReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    ASSERT_EQ((*reader)->clock().offsets_size(), 1) << path;
    EXPECT_EQ((*reader)->clock().offsets(0).reference(),
              "wall clock (trace timestamps)");
    EXPECT_EQ((*reader)->clock().offsets(0).offset_ns(), 0);
  }
}

TEST_F(ChromeImportTest, TwoKinetoRanksBecomeOneSession) {
  const fs::path rank0 = KinetoDir() / "sampled_rank-0.json.gz";
  const fs::path rank1 = KinetoDir() / "sampled_rank-1.json.gz";
  ASSERT_TRUE(fs::exists(rank0)) << rank0;
  auto imported = ImportChromeJsonFiles({rank1.string(), rank0.string()},
                                        (dir_ / "out").string());
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->paths.size(), 2u);
  auto opened = OpenTraces((dir_ / "out").string());
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_EQ(opened->readers.size(), 2u);
  EXPECT_TRUE(opened->failures.empty());
  std::map<int, const TraceReader*> by_rank;
  for (const auto& r : opened->readers) {
    by_rank[r->metadata().process_index()] = r.get();
  }
  ASSERT_EQ(by_rank.size(), 2u);
  ASSERT_TRUE(by_rank.count(0) && by_rank.count(1));
  EXPECT_EQ(by_rank[0]->metadata().session_id(),
            by_rank[1]->metadata().session_id());

  for (const auto& [rank, r] : by_rank) {
    const JsonCounts counts = CountJson(rank == 0 ? rank0 : rank1);
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(counts.rank, rank);
    EXPECT_EQ(r->metadata().process_count(), 128);
    EXPECT_EQ(r->metadata().host(), "rank" + std::to_string(rank));
    EXPECT_EQ(r->metadata().capture_options().at("source_format"), "kineto");
    EXPECT_EQ(r->known_event_count(), counts.complete);
    size_t gpu_slices = 0, begins = 0, ends = 0;
    for (const TrackEvents& e : r->ReadAllTracks(1)) {
      const proto::Track* t = r->FindTrack(e.track_id);
      if (t->kind() == proto::TRACK_KIND_DEVICE_STREAM) {
        gpu_slices += e.slices.size();
      }
      for (const FlowLink& f : e.flows) {
        (f.phase == FlowPhase::kBegin ? begins : ends) += 1;
      }
    }
    EXPECT_EQ(gpu_slices, counts.gpu);
    EXPECT_EQ(begins + ends, counts.correlated);
    EXPECT_EQ(begins, ends);
  }
  // Verified by hand in sampled_rank-0: rank 0's GPU 0, stream 23.
  const TraceReader& r = *by_rank[0];
  EXPECT_EQ(r.metadata().pid(), 4037);
  ASSERT_EQ(r.metadata().command_line_size(), 1);
  EXPECT_EQ(r.metadata().command_line(0), "pyper:trainer:0:0");
  const proto::Track* stream = TrackNamed(r, "GPU 0 stream 23");
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->kind(), proto::TRACK_KIND_DEVICE_STREAM);
  EXPECT_EQ(stream->device_id(), 0);
  EXPECT_EQ(stream->stream_id(), 23);
  TrackEvents gpu = r.ReadTrack(stream->id());
  EXPECT_EQ(gpu.slices.size(), 126u);
  const int64_t kernel_ts = int64_t{1682725898082228} * 1000;
  uint32_t k = 0;
  while (k < gpu.slices.size() && gpu.slices[k].start_ns != kernel_ts) ++k;
  ASSERT_LT(k, gpu.slices.size());
  EXPECT_EQ(r.GetString(gpu.slices[k].name),
            "void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int "
            "const*, int const*, int*)");
  EXPECT_EQ(gpu.slices[k].duration_ns, 10000);
  EXPECT_EQ(ArgText(r, gpu, EventKind::kSlice, k, "category"), "kernel");
  EXPECT_EQ(ArgText(r, gpu, EventKind::kSlice, k, "grid"), "[2400, 1, 1]");
  EXPECT_EQ(ArgText(r, gpu, EventKind::kSlice, k, "blocks per SM"), "22.2222");
  // Its launch on host thread 4037 is linked to it by a flow.
  const proto::Track* host = TrackNamed(r, "thread 4037 (python3.8)");
  ASSERT_NE(host, nullptr);
  TrackEvents cpu = r.ReadTrack(host->id());
  const int64_t launch_ts = int64_t{1682725898082212} * 1000;
  uint32_t l = 0;
  while (l < cpu.slices.size() && cpu.slices[l].start_ns != launch_ts) ++l;
  ASSERT_LT(l, cpu.slices.size());
  EXPECT_EQ(r.GetString(cpu.slices[l].name), "cudaLaunchKernel");
  EXPECT_EQ(cpu.slices[l].duration_ns, 18000);
  uint64_t launch_flow = 0, kernel_flow = 1;
  for (const FlowLink& f : cpu.flows) {
    if (f.index == l) launch_flow = f.flow_id;
  }
  for (const FlowLink& f : gpu.flows) {
    if (f.index == k) kernel_flow = f.flow_id;
  }
  // The correlation id, made unique in the session by the file's place
  // (rank 0 was given second).
  EXPECT_EQ(launch_flow, (uint64_t{2} << 40) | 6935929u);
  EXPECT_EQ(kernel_flow, launch_flow);
}

}  // namespace
}  // namespace podscope::trace_format
