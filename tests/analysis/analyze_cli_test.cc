// `podscope analyze` as a user runs it: on written multi-rank traces, on
// bad input, and on the session of a two-process train_mnist job started
// with `podscope launch`.
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pod_trace.h"
#include "run_podscope.h"
#include "simdjson.h"

namespace podscope::tools {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunPodscope;
using testing::RunResult;

simdjson::dom::element Parse(simdjson::dom::parser& parser,
                             const std::string& text) {
  auto doc = parser.parse(text);
  EXPECT_FALSE(doc.error()) << simdjson::error_message(doc.error()) << "\n"
                            << text.substr(0, 2000);
  return doc.value_unsafe();
}

TEST(AnalyzeCliTest, JsonNamesTheStragglerOfAWrittenSession) {
  const std::string dir = analysis_testing::WriteStragglerSession("cli-json");
  ASSERT_FALSE(dir.empty());
  const RunResult r = RunPodscope({"analyze", "--json", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = Parse(parser, r.out);
  EXPECT_EQ(doc["processes"].get_uint64().value(), 3u);
  EXPECT_EQ(doc["steps"]["count"].get_uint64().value(), 4u);
  EXPECT_EQ(std::string_view(doc["steps"]["matched_by"].get_string().value()),
            "number");
  simdjson::dom::array rows = doc["steps"]["rows"].get_array().value();
  ASSERT_EQ(rows.size(), 4u);
  for (simdjson::dom::element row : rows) {
    EXPECT_EQ(row["ranks"].get_array().value().size(), 3u);
  }
  EXPECT_EQ(doc["collectives"]["joined"].get_uint64().value(), 4u);
  EXPECT_EQ(doc["collectives"]["joined_by_id"].get_uint64().value(), 4u);
  simdjson::dom::element s = doc["straggler"];
  EXPECT_EQ(s["rank"].get_int64().value(), 2);
  EXPECT_EQ(s["last_count"].get_uint64().value(), 4u);
  EXPECT_EQ(s["wait_caused_ns"].get_int64().value(), 1'600'000);
  simdjson::dom::element scope = s["longer_scopes"].at(0).value();
  EXPECT_EQ(std::string_view(scope["name"].get_string().value()), "forward");
  EXPECT_EQ(scope["excess_ns"].get_int64().value(), 800'000);
  // The verdict, its test and the longest wait.
  EXPECT_THAT(std::string(doc["verdict"].get_string().value()),
              ::testing::StartsWith("rank 2 is the straggler: "));
  simdjson::dom::element test = doc["straggler_test"];
  EXPECT_EQ(test["candidate"].get_int64().value(), 2);
  EXPECT_EQ(std::string_view(test["units"].get_string().value()), "steps");
  EXPECT_EQ(test["unit_count"].get_uint64().value(), 4u);
  EXPECT_EQ(test["p_value"].get_double().value(), 0.0);
  EXPECT_TRUE(test["t"].is_null());  // every step the same: t is infinite
  simdjson::dom::element worst = doc["worst_wait"];
  EXPECT_EQ(std::string_view(worst["key"].get_string().value()), "grads#0");
  EXPECT_EQ(worst["wait_ns"].get_int64().value(), 200'000);
}

// A session of several hosts is read a host at a time; --critical_path
// loads it whole. Every key of the report is the same either way.
TEST(AnalyzeCliTest, AHostAtATimeReportsWhatTheWholeSessionGives) {
  analysis_testing::TrainingJobShape shape;
  shape.ranks = 5;
  shape.steps = 10;
  shape.recompile_at = 6;
  shape.scale = [](int rank, int, const std::string& op) {
    return rank == 1 && op == "matmul" ? 1.8 : 1.0;
  };
  const std::string dir =
      analysis_testing::WriteTrainingJob("cli-by-host", shape);
  ASSERT_FALSE(dir.empty());
  const RunResult by_host = RunPodscope({"analyze", "--json", dir});
  ASSERT_EQ(by_host.exit_code, 0) << by_host.err;
  const RunResult whole =
      RunPodscope({"analyze", "--json", "--critical_path", dir});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  simdjson::dom::parser p1, p2;
  simdjson::dom::object a = Parse(p1, by_host.out).get_object().value();
  simdjson::dom::object b = Parse(p2, whole.out).get_object().value();
  EXPECT_EQ(a["events"].get_uint64().value(), b["events"].get_uint64().value());
  EXPECT_GT(a["events"].get_uint64().value(), 0u);
  EXPECT_EQ(a["hosts"].get_uint64().value(), 5u);
  EXPECT_EQ(a["straggler"]["rank"].get_int64().value(), 1);
  size_t keys = 0;
  for (auto [key, value] : a) {
    ++keys;
    simdjson::dom::element other;
    ASSERT_FALSE(b[key].get(other)) << key;
    EXPECT_EQ(simdjson::minify(value), simdjson::minify(other)) << key;
  }
  // The whole load's report has the critical path besides.
  EXPECT_EQ(keys + 1, b.size());
  EXPECT_FALSE(a["critical_path"].error() == simdjson::SUCCESS);
}

TEST(AnalyzeCliTest, AnUnderstatedPeakIsSaid) {
  const std::string dir = analysis_testing::WriteLowPeakSession("cli-peak");
  ASSERT_FALSE(dir.empty());
  const RunResult text = RunPodscope({"analyze", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("Machine peak of host0: 20.0 GFLOP/s, "
                                  "4.0 GB/s (cached)"));
  EXPECT_THAT(text.out, HasSubstr("peak understated: 10.0 GFLOP/s, 1.0 GB/s "
                                  "was recorded"));
  const RunResult json = RunPodscope({"analyze", "--json", dir});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  simdjson::dom::parser parser;
  simdjson::dom::element peak = Parse(parser, json.out)["ops"]["peaks"].at(0);
  EXPECT_TRUE(peak["understated"].get_bool().value());
  EXPECT_EQ(peak["recorded_gflops"].get_double().value(), 10.0);
  EXPECT_EQ(peak["peak_gflops"].get_double().value(), 20.0);
}

TEST(AnalyzeCliTest, TextHasAlignedTablesAndTheStraggler) {
  const std::string dir = analysis_testing::WriteStragglerSession("cli-text");
  ASSERT_FALSE(dir.empty());
  const RunResult r = RunPodscope({"analyze", "--top", "2", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Steps (4, matched by step number; 3 ranks)"));
  EXPECT_THAT(r.out, HasSubstr("... 2 more steps"));
  EXPECT_THAT(r.out, HasSubstr("Verdict: rank 2 is the straggler: the others "
                               "waited 1.60 ms for it"));
  // The test's figures under the verdict.
  EXPECT_THAT(r.out, HasSubstr("  test: paired t-test over 4 steps of the "
                               "wait rank 2 caused against the other ranks' "
                               "mean: 400 µs more a step, t = inf, p < "
                               "0.0001 (one-sided, times 3 ranks); the other "
                               "ranks caused none\n"));
  EXPECT_THAT(r.out, HasSubstr("in steps: 0, 1, 2, 3"));
  EXPECT_THAT(r.out, HasSubstr("forward"));
  // The step table's rows line up: every line of it is as wide as its
  // header (in characters: "µs" is two bytes).
  auto width = [](std::string_view line) {
    size_t n = 0;
    for (unsigned char c : line) n += (c & 0xC0) != 0x80 ? 1 : 0;
    return n;
  };
  const size_t header = r.out.find("  step");
  ASSERT_NE(header, std::string::npos);
  const size_t header_end = r.out.find('\n', header);
  const size_t row_end = r.out.find('\n', header_end + 1);
  const std::string_view out = r.out;
  EXPECT_EQ(width(out.substr(header, header_end - header)),
            width(out.substr(header_end + 1, row_end - header_end - 1)));
}

// The text after `prefix` on the line that starts with it, or "".
std::string LineAfter(const std::string& out, const std::string& prefix) {
  const size_t at = out.find("\n" + prefix);
  if (at == std::string::npos) return "";
  const size_t from = at + 1 + prefix.size();
  return out.substr(from, out.find('\n', from) - from);
}

// One verdict: `analyze` and `summary` state the same sentence about who
// the others wait for, whether a rank is named or not.
TEST(AnalyzeCliTest, AnalyzeAndSummaryStateTheSameVerdict) {
  struct Case {
    std::string dir;
    std::string starts;
    int named;  // the straggler's rank, -1: none
  };
  const Case cases[] = {
      {analysis_testing::WriteStragglerSession("cli-verdict-straggler"),
       "rank 2 is the straggler: the others waited 1.60 ms for it, at most "
       "0 ns for any other rank (p < 0.0001 over 4 steps); longer on it "
       "than on the others: forward (+800 µs); ranks wait ",
       2},
      // Two ranks that take turns arriving last by the same 100 µs.
      {analysis_testing::WriteSynchronousJob(
           "cli-verdict-balanced", 2, 6, 2,
           [](int rank, int k) {
             return 1'000'000 + ((k + rank) % 2) * 100'000;
           }),
       "No consistent straggler: rank 0 caused the most waiting, 600 µs, at "
       "most 600 µs for any other rank (p = 1 over 6 steps, corrected for "
       "picking 1 of 2 ranks); ranks wait ",
       -1},
  };
  for (const Case& c : cases) {
    ASSERT_FALSE(c.dir.empty());
    const RunResult analyze = RunPodscope({"analyze", c.dir});
    ASSERT_EQ(analyze.exit_code, 0) << analyze.err;
    const RunResult summary = RunPodscope({"summary", c.dir});
    ASSERT_EQ(summary.exit_code, 0) << summary.err;
    const std::string said = LineAfter(analyze.out, "Verdict: ");
    EXPECT_THAT(said, ::testing::StartsWith(c.starts)) << analyze.out;
    EXPECT_EQ(LineAfter(summary.out, "  verdict: "), said) << summary.out;
    EXPECT_THAT(summary.out, ::testing::Not(HasSubstr("slowest rank")));
    // The JSON of both carries it too, with the rank it names.
    const RunResult summary_json = RunPodscope({"summary", "--json", c.dir});
    ASSERT_EQ(summary_json.exit_code, 0) << summary_json.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = Parse(parser, summary_json.out);
    EXPECT_EQ(std::string(doc["verdict"].get_string().value()), said);
    if (c.named >= 0) {
      EXPECT_EQ(doc["straggler_rank"].get_int64().value(), c.named);
    } else {
      EXPECT_TRUE(doc["straggler_rank"].is_null());
    }
    const RunResult analyze_json = RunPodscope({"analyze", "--json", c.dir});
    ASSERT_EQ(analyze_json.exit_code, 0) << analyze_json.err;
    simdjson::dom::parser parser2;
    EXPECT_EQ(
        std::string(
            Parse(parser2, analyze_json.out)["verdict"].get_string().value()),
        said);
  }
}

TEST(AnalyzeCliTest, BadInputGetsAClearErrorAndExitCode) {
  RunResult r = RunPodscope({"analyze", "/no/such/trace"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("podscope analyze: "));
  EXPECT_THAT(r.err, HasSubstr("/no/such/trace"));
  r = RunPodscope({"analyze"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("expects a PATH"));
  r = RunPodscope({"analyze", "--top", "x", "/tmp"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--top"));
  const fs::path junk =
      fs::path(analysis_testing::FreshDir("cli-junk")) / "junk.podtrace";
  {
    std::FILE* f = std::fopen(junk.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a trace at all", f);
    std::fclose(f);
  }
  r = RunPodscope({"analyze", junk.string()});
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_THAT(r.err, HasSubstr("junk.podtrace"));
  r = RunPodscope({"help", "analyze"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Usage: podscope analyze"));
}

// A real job: two ranks of train_mnist under `podscope launch`, then
// `podscope analyze --json` on its session folder.
TEST(AnalyzeCliTest, LaunchedTrainMnistJob) {
  const fs::path dir = analysis_testing::FreshDir("cli-launch");
  const fs::path logdir = dir / "logs";
  const RunResult launch =
      RunPodscope({"launch", "--nproc_per_node", "2", PODSCOPE_TRAIN_MNIST,
                   "--fake_data", "--steps", "4", "--batch_size", "16",
                   "--test_batches", "0", "--log_every", "1", "--profiler_port",
                   "-1", "--logdir", logdir.string()});
  ASSERT_EQ(launch.exit_code, 0) << launch.out << launch.err;
  std::vector<fs::path> sessions;
  for (const auto& e : fs::directory_iterator(logdir)) {
    if (e.is_directory()) sessions.push_back(e.path());
  }
  ASSERT_EQ(sessions.size(), 1u);
  const RunResult r = RunPodscope({"analyze", "--json", sessions[0].string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = Parse(parser, r.out);
  EXPECT_EQ(doc["processes"].get_uint64().value(), 2u);
  simdjson::dom::array ranks = doc["ranks"].get_array().value();
  ASSERT_EQ(ranks.size(), 2u);
  // Four train_step scopes per rank, matched across the two.
  EXPECT_EQ(doc["steps"]["count"].get_uint64().value(), 4u);
  simdjson::dom::array rows = doc["steps"]["rows"].get_array().value();
  for (simdjson::dom::element row : rows) {
    simdjson::dom::array cells = row["ranks"].get_array().value();
    ASSERT_EQ(cells.size(), 2u);
    for (simdjson::dom::element c : cells) {
      ASSERT_TRUE(c.is_object()) << "a rank misses a step";
      EXPECT_GT(c["duration_ns"].get_int64().value(), 0);
    }
  }
  for (simdjson::dom::element rank : ranks) {
    EXPECT_EQ(rank["steps"].get_uint64().value(), 4u);
    EXPECT_GT(rank["category_ns"]["compute"].get_int64().value(), 0);
  }
  // Gradients are all-reduced every step; every joined one reaches both
  // ranks by its collective_id.
  const uint64_t joined = doc["collectives"]["joined"].get_uint64().value();
  EXPECT_GE(joined, 4u);
  EXPECT_EQ(doc["collectives"]["joined_by_id"].get_uint64().value(), joined);
  simdjson::dom::array list = doc["collectives"]["list"].get_array().value();
  for (simdjson::dom::element c : list) {
    EXPECT_EQ(c["arrivals"].get_array().value().size(), 2u);
  }
  // Each rank compiled its step graph at least once, and missed the cache
  // the first time.
  EXPECT_GE(doc["compiles"]["count"].get_uint64().value(), 2u);
  EXPECT_GE(doc["compiles"]["misses"].get_uint64().value(), 2u);
  bool rank0 = false, rank1 = false;
  simdjson::dom::array compiles = doc["compiles"]["list"].get_array().value();
  for (simdjson::dom::element c : compiles) {
    const int64_t rank = c["rank"].get_int64().value();
    rank0 |= rank == 0;
    rank1 |= rank == 1;
    EXPECT_FALSE(
        std::string_view(c["graph_hash"].get_string().value()).empty());
  }
  EXPECT_TRUE(rank0 && rank1);

  // The critical path of the slowest step runs over both ranks' work and
  // is as long as the step's window, within 1 %.
  const RunResult cp = RunPodscope(
      {"analyze", "--json", "--critical_path", sessions[0].string()});
  ASSERT_EQ(cp.exit_code, 0) << cp.err;
  simdjson::dom::parser cp_parser;
  simdjson::dom::element path = Parse(cp_parser, cp.out)["critical_path"];
  const int64_t window =
      path["end_ns"].get_int64().value() - path["start_ns"].get_int64().value();
  const int64_t length = path["length_ns"].get_int64().value();
  EXPECT_GT(window, 0);
  EXPECT_NEAR(static_cast<double>(length), static_cast<double>(window),
              0.01 * static_cast<double>(window));
  simdjson::dom::array segments = path["segments"].get_array().value();
  EXPECT_GT(segments.size(), 1u);
  for (simdjson::dom::element s : segments) {
    const int64_t rank = s["rank"].get_int64().value();
    EXPECT_TRUE(rank == 0 || rank == 1);
  }
  // The runtime's trace contract: compiles carry their signature, memory
  // comes from Allocate/Free with live buffers at the peak, kernels carry
  // flops against the measured machine peak.
  simdjson::dom::element first = compiles.at(0).value();
  EXPECT_THAT(std::string(first["signature"].get_string().value()),
              HasSubstr("f32["));
  simdjson::dom::array memory = doc["memory"].get_array().value();
  ASSERT_EQ(memory.size(), 2u);
  for (simdjson::dom::element m : memory) {
    EXPECT_EQ(std::string_view(m["source"].get_string().value()),
              "allocations");
    EXPECT_GT(m["peak_bytes"].get_int64().value(), 0);
    EXPECT_GT(m["live_at_peak"].get_array().value().size(), 0u);
  }
  EXPECT_EQ(doc["ops"]["peaks"].get_array().value().size(), 1u);
  EXPECT_GT(doc["ops"]["by_kind"].get_array().value().size(), 0u);
  // The top work lists the device kernels.
  EXPECT_GT(doc["top"]["device_ops"].get_array().value().size(), 0u);
}

}  // namespace
}  // namespace podscope::tools
