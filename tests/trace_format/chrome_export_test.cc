// Chrome trace JSON export, checked by parsing the output with simdjson as
// Perfetto UI or chrome://tracing would read it.
#include "podscope/trace_format/chrome_export.h"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "podscope/trace_format/writer.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

namespace fs = std::filesystem;
namespace od = simdjson::ondemand;

struct JsonArg {
  char type = '?';  // 'i' integer, 'd' floating point, 's' string
  int64_t i = 0;
  double d = 0;
  std::string s;
};

struct JsonEvent {
  std::string ph, name, s, id, cat, bp, sf;
  int64_t pid = -1, tid = -1;
  std::string ts, dur;  // the numbers as written
  std::map<std::string, JsonArg> args;
};

struct JsonFrame {
  std::string name, category, parent;
};

struct JsonTrace {
  std::vector<JsonEvent> events;
  std::map<std::string, JsonFrame> frames;
};

// "12.345" (microseconds) -> 12345 ns, insisting on exactly 3 decimals.
int64_t MicrosTextToNs(std::string_view text) {
  while (!text.empty() &&
         std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  const size_t dot = text.find('.');
  EXPECT_NE(dot, std::string_view::npos) << text;
  EXPECT_EQ(text.size() - dot - 1, 3u) << "3 decimals: " << text;
  const bool negative = text.front() == '-';
  const std::string digits =
      std::string(text.substr(negative, dot - negative)) +
      std::string(text.substr(dot + 1));
  const int64_t ns = std::stoll(digits);
  return negative ? -ns : ns;
}

JsonArg ReadArg(od::value v) {
  JsonArg arg;
  if (v.type() == od::json_type::string) {
    arg.type = 's';
    arg.s = std::string(std::string_view(v.get_string()));
  } else if (v.type() == od::json_type::number) {
    if (v.get_number_type() == od::number_type::floating_point_number) {
      arg.type = 'd';
      arg.d = v.get_double();
    } else {
      arg.type = 'i';
      arg.i = v.get_int64();
    }
  }
  return arg;
}

JsonTrace ParseChromeJson(const std::string& text) {
  JsonTrace trace;
  od::parser parser;
  simdjson::padded_string padded(text);
  od::document doc = parser.iterate(padded);
  for (auto field : doc.get_object()) {
    const std::string_view key = field.unescaped_key();
    if (key == "traceEvents") {
      for (od::object object : field.value().get_array()) {
        JsonEvent& e = trace.events.emplace_back();
        for (auto f : object) {
          const std::string k(std::string_view(f.unescaped_key()));
          od::value v = f.value();
          if (k == "ts")
            e.ts = std::string(v.raw_json_token());
          else if (k == "dur")
            e.dur = std::string(v.raw_json_token());
          else if (k == "pid")
            e.pid = v.get_int64();
          else if (k == "tid")
            e.tid = v.get_int64();
          else if (k == "args") {
            for (auto a : v.get_object()) {
              e.args[std::string(std::string_view(a.unescaped_key()))] =
                  ReadArg(a.value());
            }
          } else {
            const std::string s(std::string_view(v.get_string()));
            if (k == "ph")
              e.ph = s;
            else if (k == "name")
              e.name = s;
            else if (k == "s")
              e.s = s;
            else if (k == "id")
              e.id = s;
            else if (k == "cat")
              e.cat = s;
            else if (k == "bp")
              e.bp = s;
            else if (k == "sf")
              e.sf = s;
          }
        }
      }
    } else if (key == "stackFrames") {
      for (auto node : field.value().get_object()) {
        JsonFrame& frame =
            trace.frames[std::string(std::string_view(node.unescaped_key()))];
        for (auto f : node.value().get_object()) {
          const std::string_view k = f.unescaped_key();
          const std::string v(std::string_view(f.value().get_string()));
          if (k == "name")
            frame.name = v;
          else if (k == "category")
            frame.category = v;
          else if (k == "parent")
            frame.parent = v;
        }
      }
    }
  }
  return trace;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ReadGzip(const std::string& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  EXPECT_NE(gz, nullptr);
  if (gz == nullptr) return {};
  std::string out;
  char buffer[1 << 14];
  int n;
  while ((n = gzread(gz, buffer, sizeof(buffer))) > 0) out.append(buffer, n);
  EXPECT_EQ(n, 0) << "gzread failed";
  gzclose(gz);
  return out;
}

constexpr int64_t kOffsetNs = 1'000'000;  // file A's clock offset
constexpr int64_t kFarNs = 5'000'000'123'456'789;
const std::string kOddName =
    "say \"hi\" \\ path\ttab\nline\x01\x1f end \xC3\xA9";

// Two files as two processes: A with a clock offset and every event kind,
// B without offsets.
class ChromeExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("podscope_chrome_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    a_ = testing::OpenOrDie(WriteFileA());
    b_ = testing::OpenOrDie(WriteFileB());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteFileA() {
    std::string data;
    auto w = *TraceWriter::Create(MakeStringSink(&data));
    proto::Metadata m;
    m.set_host("alpha");
    m.set_pid(100);
    m.set_process_index(0);
    m.set_process_count(2);
    w->SetMetadata(m);
    proto::ClockOffset offset;
    offset.set_offset_ns(kOffsetNs);
    w->AddClockOffset(offset);
    proto::Track t;
    t.set_kind(proto::TRACK_KIND_THREAD);
    t.set_name(kOddName);
    main_ = w->AddTrack(t);
    t.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
    t.set_name("cpu:0 stream 0");
    device_ = w->AddTrack(t);
    t.set_kind(proto::TRACK_KIND_COUNTER);
    t.set_name("memory");
    t.set_unit("bytes");
    counter_ = w->AddTrack(t);

    const uint32_t step = w->InternString("step");
    const uint32_t forward = w->InternString("forward");
    const uint32_t odd = w->InternString(kOddName);
    const Arg args[] = {
        {w->InternString("batch"), int64_t{-42}},
        {w->InternString("big"), std::numeric_limits<int64_t>::min()},
        {w->InternString("ratio"), 0.1},
        {w->InternString("kind"), StringId{w->InternString("gemm \"q\"")}}};
    // End order, as a recorder writes: children first.
    w->AddSlice(main_, 2'500, 100, odd);
    EventRef fwd = w->AddSlice(main_, 2'000, 3'000, forward, args);
    w->AddFlow(fwd, 77, FlowPhase::kBegin);
    w->AddSlice(main_, 1'000, 10'000, step);
    w->AddSlice(main_, 11'000, 0, step);  // empty, right at the end
    w->AddSlice(main_, kFarNs, 1, step);
    EventRef mark = w->AddInstant(main_, 5'000, w->InternString("mark"),
                                  std::span(args).subspan(0, 1));
    w->AddFlow(mark, 77, FlowPhase::kStep);
    EventRef kernel =
        w->AddSlice(device_, 6'000, 500, w->InternString("kernel"));
    w->AddFlow(kernel, 77, FlowPhase::kEnd);
    w->AddCounter(counter_, 1'000, 1);
    w->AddCounter(counter_, 2'000, 2.5);
    w->AddCounter(counter_, 3'000, std::numeric_limits<double>::quiet_NaN());
    proto::Frame f;
    f.set_function_name(w->InternString("main"));
    f.set_module_name(w->InternString("app"));
    const uint32_t root = w->AddFrame(f);
    f.set_function_name(w->InternString("Compute"));
    const uint32_t leaf = w->AddFrame(f);
    const uint32_t frames[] = {leaf, root};
    w->AddSample(main_, 4'000, w->AddStack(frames));
    EXPECT_TRUE(w->Close().ok());
    return data;
  }

  std::string WriteFileB() {
    std::string data;
    auto w = *TraceWriter::Create(MakeStringSink(&data));
    proto::Metadata m;
    m.set_host("beta");
    m.set_pid(200);
    m.set_process_index(-1);  // unknown
    w->SetMetadata(m);
    proto::Track t;
    t.set_name("worker");
    const uint32_t track = w->AddTrack(t);
    w->AddFlow(w->AddSlice(track, 7'000, 10, w->InternString("recv")), 77,
               FlowPhase::kEnd);
    EXPECT_TRUE(w->Close().ok());
    return data;
  }

  JsonTrace Export(const ChromeExportOptions& options, std::string* text) {
    const std::string path =
        (dir_ / (options.gzip ? "out.json.gz" : "out.json")).string();
    const TraceReader* readers[] = {a_.get(), b_.get()};
    auto stats = ExportChrome(readers, path, options);
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (!stats.ok()) return {};
    EXPECT_EQ(stats->events, 12u);
    EXPECT_EQ(stats->bytes, fs::file_size(path));
    *text = options.gzip ? ReadGzip(path) : ReadFile(path);
    return ParseChromeJson(*text);
  }

  static std::vector<const JsonEvent*> Select(const JsonTrace& t,
                                              std::string_view ph,
                                              int64_t pid = -1) {
    std::vector<const JsonEvent*> out;
    for (const JsonEvent& e : t.events) {
      if (e.ph == ph && (pid < 0 || e.pid == pid)) out.push_back(&e);
    }
    return out;
  }

  fs::path dir_;
  std::unique_ptr<TraceReader> a_, b_;
  uint32_t main_ = 0, device_ = 0, counter_ = 0;
};

TEST_F(ChromeExportTest, ProcessesThreadsAndSlicesWithClockAlignment) {
  std::string text;
  const JsonTrace t = Export({}, &text);
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  for (const JsonEvent* e : Select(t, "M")) {
    if (e->name == "process_name") process_names[e->pid] = e->args.at("name").s;
    if (e->name == "thread_name") {
      thread_names[{e->pid, e->tid}] = e->args.at("name").s;
    }
  }
  EXPECT_EQ(process_names[100], "alpha pid 100 (process 0/2)");
  EXPECT_EQ(process_names[200], "beta pid 200");
  EXPECT_EQ(thread_names[std::make_pair(int64_t{100}, int64_t{main_})],
            kOddName)
      << "escaping round-trips";
  EXPECT_EQ(thread_names[std::make_pair(int64_t{100}, int64_t{device_})],
            "cpu:0 stream 0");
  EXPECT_EQ(thread_names[std::make_pair(int64_t{200}, int64_t{1})], "worker");

  // Every slice, shifted by A's clock offset; B has none.
  std::multiset<std::tuple<int64_t, int64_t, std::string, int64_t, int64_t>>
      got;
  for (const JsonEvent* e : Select(t, "X")) {
    got.emplace(e->pid, e->tid, e->name, MicrosTextToNs(e->ts),
                MicrosTextToNs(e->dur));
  }
  const int64_t m = main_;
  std::multiset<std::tuple<int64_t, int64_t, std::string, int64_t, int64_t>>
      want = {{100, m, "step", 1'000 + kOffsetNs, 10'000},
              {100, m, "forward", 2'000 + kOffsetNs, 3'000},
              {100, m, kOddName, 2'500 + kOffsetNs, 100},
              {100, m, "step", 11'000 + kOffsetNs, 0},
              {100, m, "step", kFarNs + kOffsetNs, 1},
              {100, device_, "kernel", 6'000 + kOffsetNs, 500},
              {200, 1, "recv", 7'000, 10}};
  EXPECT_EQ(got, want);
  EXPECT_NE(text.find("\"ts\":5000000124456.789"), std::string::npos)
      << "nanosecond precision at large times";

  // Per thread, in time order and properly nested.
  std::map<std::pair<int64_t, int64_t>,
           std::vector<std::pair<int64_t, int64_t>>>
      open;
  std::map<std::pair<int64_t, int64_t>, int64_t> last_ts;
  for (const JsonEvent* e : Select(t, "X")) {
    const auto key = std::make_pair(e->pid, e->tid);
    const int64_t ts = MicrosTextToNs(e->ts);
    const int64_t end = ts + MicrosTextToNs(e->dur);
    if (last_ts.contains(key)) {
      EXPECT_GE(ts, last_ts[key]) << e->name;
    }
    last_ts[key] = ts;
    auto& stack = open[key];
    while (!stack.empty() && stack.back().second < ts) stack.pop_back();
    if (!stack.empty()) {
      EXPECT_LE(end, stack.back().second) << e->name << " overlaps its parent";
    }
    stack.emplace_back(ts, end);
  }
}

TEST_F(ChromeExportTest, ArgsInstantsCountersFlowsAndSamples) {
  std::string text;
  const JsonTrace t = Export({}, &text);
  const JsonEvent* forward = nullptr;
  for (const JsonEvent* e : Select(t, "X")) {
    if (e->name == "forward") forward = e;
  }
  ASSERT_NE(forward, nullptr);
  ASSERT_EQ(forward->args.size(), 4u);
  EXPECT_EQ(forward->args.at("batch").type, 'i');
  EXPECT_EQ(forward->args.at("batch").i, -42);
  EXPECT_EQ(forward->args.at("big").type, 'i');
  EXPECT_EQ(forward->args.at("big").i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(forward->args.at("ratio").type, 'd');
  EXPECT_EQ(forward->args.at("ratio").d, 0.1) << "doubles round-trip";
  EXPECT_EQ(forward->args.at("kind").type, 's');
  EXPECT_EQ(forward->args.at("kind").s, "gemm \"q\"");

  const auto instants = Select(t, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]->name, "mark");
  EXPECT_EQ(instants[0]->s, "t");
  EXPECT_EQ(MicrosTextToNs(instants[0]->ts), 5'000 + kOffsetNs);
  EXPECT_EQ(instants[0]->args.at("batch").i, -42);

  const auto counters = Select(t, "C");
  ASSERT_EQ(counters.size(), 3u);
  for (const JsonEvent* c : counters) EXPECT_EQ(c->name, "memory");
  EXPECT_EQ(MicrosTextToNs(counters[0]->ts), 1'000 + kOffsetNs);
  EXPECT_EQ(counters[0]->args.at("bytes").i, 1);
  EXPECT_EQ(counters[1]->args.at("bytes").d, 2.5);
  EXPECT_EQ(counters[2]->args.at("bytes").type, 's') << "NaN is not JSON";

  // Flow 77 of A: begin on "forward", step on the instant, end on "kernel";
  // B's flow 77 is another process's flow and must not join it.
  const auto begins = Select(t, "s", 100);
  const auto steps = Select(t, "t", 100);
  const auto ends = Select(t, "f", 100);
  ASSERT_EQ(begins.size(), 1u);
  ASSERT_EQ(steps.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(begins[0]->id, ends[0]->id);
  EXPECT_EQ(steps[0]->id, ends[0]->id);
  EXPECT_EQ(begins[0]->tid, main_);
  EXPECT_EQ(MicrosTextToNs(begins[0]->ts), 2'000 + kOffsetNs);
  EXPECT_EQ(ends[0]->tid, device_);
  EXPECT_EQ(MicrosTextToNs(ends[0]->ts), 6'000 + kOffsetNs);
  const auto b_ends = Select(t, "f", 200);
  ASSERT_EQ(b_ends.size(), 1u);
  EXPECT_NE(b_ends[0]->id, ends[0]->id);

  const auto samples = Select(t, "P");
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(MicrosTextToNs(samples[0]->ts), 4'000 + kOffsetNs);
  ASSERT_TRUE(t.frames.contains(samples[0]->sf));
  const JsonFrame& leaf = t.frames.at(samples[0]->sf);
  EXPECT_EQ(leaf.name, "Compute");
  EXPECT_EQ(leaf.category, "app");
  ASSERT_TRUE(t.frames.contains(leaf.parent));
  EXPECT_EQ(t.frames.at(leaf.parent).name, "main");
  EXPECT_TRUE(t.frames.at(leaf.parent).parent.empty()) << "main is the root";
}

TEST_F(ChromeExportTest, WithoutAlignmentTimesStayLocal) {
  std::string text;
  const JsonTrace t = Export({.align_clocks = false}, &text);
  std::set<int64_t> starts;
  for (const JsonEvent* e : Select(t, "X", 100)) {
    starts.insert(MicrosTextToNs(e->ts));
  }
  EXPECT_EQ(starts,
            std::set<int64_t>({1'000, 2'000, 2'500, 6'000, 11'000, kFarNs}));
}

TEST_F(ChromeExportTest, GzipHoldsTheSameDocument) {
  std::string plain, unzipped;
  std::vector<std::pair<size_t, size_t>> progress;
  ChromeExportOptions options;
  options.progress = [&](size_t done, size_t total) {
    progress.emplace_back(done, total);
  };
  const JsonTrace p = Export(options, &plain);
  options.gzip = true;
  progress.clear();
  const JsonTrace z = Export(options, &unzipped);
  EXPECT_EQ(unzipped, plain);
  EXPECT_EQ(z.events.size(), p.events.size());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), std::make_pair(size_t{4}, size_t{4}));
  // Really compressed: the file starts with gzip's magic bytes.
  const std::string raw = ReadFile((dir_ / "out.json.gz").string());
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(raw.substr(0, 2), "\x1f\x8b");
}

TEST_F(ChromeExportTest, UnwritablePathIsAnErrorNamingIt) {
  const std::string path = (dir_ / "no" / "such" / "dir" / "x.json").string();
  const TraceReader* readers[] = {a_.get()};
  auto stats = ExportChrome(readers, path);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find(path), std::string_view::npos);
}

}  // namespace
}  // namespace podscope::trace_format
