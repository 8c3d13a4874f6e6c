// `podscope summary` on the known two-host capture.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>

#include "run_podscope.h"
#include "trace_fixtures.h"

namespace podscope::tools::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class SummaryCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("summary"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `summary --json ARGS...` and parses the object it prints.
  simdjson::dom::element SummaryJson(std::vector<std::string> args,
                                     int expected_exit = 0) {
    args.insert(args.begin(), {"summary", "--json"});
    const RunResult r = RunPodscope(args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.out << r.err;
    json_ = r.out;
    simdjson::dom::element doc;
    EXPECT_EQ(parser_.parse(json_).get(doc), simdjson::SUCCESS) << json_;
    return doc;
  }

  fs::path dir_;
  simdjson::dom::parser parser_;
  std::string json_;
};

TEST_F(SummaryCli, JsonHoldsTheKnownNumbers) {
  WriteCapture(dir_);
  simdjson::dom::element s = SummaryJson({dir_.string()});
  EXPECT_EQ(uint64_t(s["total_events"]), Capture::kEventsA + Capture::kEventsB);

  simdjson::dom::array hosts = s["hosts"];
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(std::string_view(hosts.at(1)["name"]), "host-b");
  EXPECT_EQ(uint64_t(hosts.at(1)["processes"]), 1u);

  simdjson::dom::array processes = s["processes"];
  ASSERT_EQ(processes.size(), 2u);
  simdjson::dom::element a = processes.at(0);
  EXPECT_EQ(std::string_view(a["host"]), "host-a");
  EXPECT_EQ(int64_t(a["pid"]), 100);
  EXPECT_EQ(int64_t(a["process_index"]), 0);
  EXPECT_EQ(int64_t(a["process_count"]), 2);
  EXPECT_EQ(std::string_view(a["session_id"]), "s1");
  EXPECT_EQ(simdjson::dom::array(a["command_line"]).size(), 3u);
  EXPECT_EQ(std::string_view(a["status"]), "intact");
  EXPECT_EQ(uint64_t(a["events"]), Capture::kEventsA);
  simdjson::dom::array tracks = a["tracks"];
  ASSERT_EQ(tracks.size(), 3u);
  EXPECT_EQ(std::string_view(tracks.at(0)["kind"]), "thread");
  EXPECT_EQ(std::string_view(tracks.at(0)["name"]), "main");
  EXPECT_EQ(uint64_t(tracks.at(0)["events"]), 15u);
  EXPECT_EQ(uint64_t(tracks.at(0)["slices"]), 12u);
  EXPECT_EQ(uint64_t(tracks.at(0)["instants"]), 3u);
  EXPECT_EQ(uint64_t(tracks.at(0)["dropped"]), 7u);
  EXPECT_EQ(std::string_view(tracks.at(1)["kind"]), "device stream");
  EXPECT_EQ(uint64_t(tracks.at(1)["slices"]), 3u);
  EXPECT_EQ(std::string_view(tracks.at(2)["kind"]), "counter");
  EXPECT_EQ(uint64_t(tracks.at(2)["counters"]), 5u);

  simdjson::dom::element dropped = s["dropped"];
  EXPECT_EQ(uint64_t(dropped["total"]), 12u);
  simdjson::dom::array dropped_tracks = dropped["tracks"];
  ASSERT_EQ(dropped_tracks.size(), 2u);
  EXPECT_EQ(std::string_view(dropped_tracks.at(1)["host"]), "host-b");
  EXPECT_EQ(std::string_view(dropped_tracks.at(1)["track"]), "main");
  EXPECT_EQ(uint64_t(dropped_tracks.at(1)["dropped"]), 5u);

  simdjson::dom::element span = s["time_span"];
  EXPECT_TRUE(bool(span["clocks_aligned"]));
  EXPECT_EQ(int64_t(span["first_ns"]), Capture::kAlignedFirst);
  EXPECT_EQ(int64_t(span["last_ns"]), Capture::kAlignedLast);
  EXPECT_EQ(int64_t(span["duration_ns"]),
            Capture::kAlignedLast - Capture::kAlignedFirst);
  EXPECT_EQ(int64_t(span["first_realtime_ns"]),
            Capture::kRealtimeBase + Capture::kAlignedFirst);
  EXPECT_EQ(uint64_t(span["files_with_clock_offsets"]), 2u);

  simdjson::dom::array top = s["top_names"];
  ASSERT_EQ(top.size(), 5u);
  EXPECT_EQ(std::string_view(top.at(0)["name"]), "step");
  EXPECT_EQ(uint64_t(top.at(0)["count"]), 6u);
  EXPECT_EQ(int64_t(top.at(0)["total_ns"]), Capture::kStepTotal);
  EXPECT_EQ(int64_t(top.at(0)["self_ns"]), Capture::kStepSelf);
  EXPECT_EQ(int64_t(top.at(0)["mean_ns"]), 850'000);
  EXPECT_EQ(int64_t(top.at(0)["max_ns"]), 900'000);
  const char* expected_order[] = {"step", "backward", "forward", "matmul",
                                  "kernel"};
  const int64_t expected_self[] = {Capture::kStepSelf, 900'000, 600'000,
                                   300'000, 150'000};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(std::string_view(top.at(i)["name"]), expected_order[i]);
    EXPECT_EQ(int64_t(top.at(i)["self_ns"]), expected_self[i]) << i;
  }
  EXPECT_EQ(simdjson::dom::array(s["warnings"]).size(), 0u);
}

TEST_F(SummaryCli, TopLimitsTheNames) {
  WriteCapture(dir_);
  simdjson::dom::element s = SummaryJson({"--top", "2", dir_.string()});
  EXPECT_EQ(simdjson::dom::array(s["top_names"]).size(), 2u);
  EXPECT_EQ(uint64_t(s["distinct_names"]), 5u);
}

TEST_F(SummaryCli, WithoutClockOffsetsTheSpanIsOnEachHostsClock) {
  WriteCapture(dir_, /*clock_offsets=*/false);
  simdjson::dom::element span = SummaryJson({dir_.string()})["time_span"];
  EXPECT_FALSE(bool(span["clocks_aligned"]));
  EXPECT_TRUE(bool(span["align_requested"]));
  EXPECT_EQ(uint64_t(span["files_with_clock_offsets"]), 0u);
  EXPECT_EQ(int64_t(span["first_ns"]), Capture::kAlignedFirst);
  EXPECT_EQ(int64_t(span["last_ns"]), Capture::kLocalLast);

  const RunResult r = RunPodscope({"summary", dir_.string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Time span: 51.8 ms"));
  EXPECT_THAT(r.out, HasSubstr("clocks NOT aligned: 2 of 2 files have no "
                               "clock offsets"));
}

TEST_F(SummaryCli, NoAlignClocksIgnoresTheOffsets) {
  WriteCapture(dir_);
  simdjson::dom::element span =
      SummaryJson({"--no-align-clocks", dir_.string()})["time_span"];
  EXPECT_FALSE(bool(span["clocks_aligned"]));
  EXPECT_FALSE(bool(span["align_requested"]));
  EXPECT_EQ(int64_t(span["last_ns"]), Capture::kLocalLast);
}

TEST_F(SummaryCli, HumanOutputNamesEverythingWithUnits) {
  WriteCapture(dir_);
  const RunResult r = RunPodscope({"summary", dir_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("2 processes on 2 hosts, 26 events"));
  EXPECT_THAT(r.out, HasSubstr("host-a pid 100, process 0 of 2, session s1"));
  EXPECT_THAT(r.out, HasSubstr("command: train --steps 3"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "thread +main +15 events +\\(12 slices, 3 instants\\) "
                         "+7 dropped"));
  EXPECT_THAT(r.out, HasSubstr("Time span: 3.00 ms"));
  EXPECT_THAT(r.out, HasSubstr("clocks aligned: all 2 files have offsets to "
                               "the reference clock 'client'"));
  EXPECT_THAT(r.out, HasSubstr("first event at 2023-11-14 22:13:20.001 UTC"));
  EXPECT_THAT(r.out, HasSubstr("Dropped events: 12"));
  EXPECT_THAT(r.out, HasSubstr("Top 5 of 5 event names by total time"));
  // name, count, total, self, mean, max
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "step +6 +5.10 ms +3.30 ms +850 µs +900 µs"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "forward +3 +900 µs +600 µs +300 µs +300 µs"));
  EXPECT_THAT(r.out, Not(HasSubstr("Warnings")));
}

TEST_F(SummaryCli, UnreadableAndRecoveredFilesAreWarnings) {
  WriteCapture(dir_);
  WriteGarbage(dir_ / "junk.podtrace");
  WriteTorn(dir_ / "host-c.300.podtrace");
  RunResult r = RunPodscope({"summary", dir_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Warnings:"));
  EXPECT_THAT(r.out, HasSubstr("junk.podtrace: unreadable, not summarised"));
  EXPECT_THAT(r.out, HasSubstr("host-c.300.podtrace: recovered"));
  EXPECT_THAT(r.out, HasSubstr("3 processes on 3 hosts, 56 events"));

  simdjson::dom::element s = SummaryJson({dir_.string()});
  simdjson::dom::array warnings = s["warnings"];
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(std::string_view(warnings.at(0)["status"]), "unreadable");
  EXPECT_EQ(std::string_view(warnings.at(1)["status"]), "recovered");
  EXPECT_EQ(uint64_t(s["total_events"]), 26u + 30u);
}

TEST_F(SummaryCli, NothingReadableExitsThree) {
  RunResult r = RunPodscope({"summary", (dir_ / "missing").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("missing: no such file or folder"));

  WriteGarbage(dir_ / "junk.podtrace");
  r = RunPodscope({"summary", dir_.string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("no readable trace"));
  EXPECT_THAT(r.out, HasSubstr("junk.podtrace: unreadable"));
}

}  // namespace
}  // namespace podscope::tools::testing
