// `podscope export --format perfetto` on the known capture, decoded with
// the classes generated from Perfetto's field numbers, and imported Kineto
// traces read by `podscope summary` like any capture.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "podscope/trace_format/perfetto_export.h"
#include "podscope/trace_format/perfetto_trace.pb.h"
#include "run_podscope.h"
#include "trace_fixtures.h"

namespace podscope::tools::testing {
namespace {

namespace fs = std::filesystem;
namespace pf = trace_format::perfetto;
using ::testing::HasSubstr;

class InteropCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("interop");
    WriteCapture(dir_ / "capture");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(InteropCli, PerfettoExportHoldsEverySliceOnTheAlignedClock) {
  const fs::path out = dir_ / "trace.pftrace";
  const RunResult r =
      RunPodscope({"export", "--format", "perfetto",
                   (dir_ / "capture").string(), "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("wrote 26 events ("));
  EXPECT_THAT(r.out, HasSubstr("from 2 files to " + out.string()));
  EXPECT_EQ(r.err, "");

  std::ifstream in(out, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  pf::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(s.str()));
  std::map<uint64_t, pf::TrackDescriptor> tracks;
  std::map<uint32_t, std::map<uint64_t, std::string>> names;
  std::map<std::string, std::vector<uint64_t>> begins;  // name -> timestamps
  int counters = 0, instants = 0;
  for (const pf::TracePacket& p : trace.packet()) {
    for (const auto& n : p.interned_data().event_names()) {
      names[p.trusted_packet_sequence_id()][n.iid()] = n.name();
    }
    if (p.has_track_descriptor()) {
      tracks[p.track_descriptor().uuid()] = p.track_descriptor();
      continue;
    }
    const auto& ev = p.track_event();
    const std::string name =
        names[p.trusted_packet_sequence_id()][ev.name_iid()];
    if (ev.type() == pf::TrackEvent::TYPE_SLICE_BEGIN) {
      begins[name].push_back(p.timestamp());
      if (name == "kernel") {
        EXPECT_EQ(tracks[ev.track_uuid()].name(), "cpu:0/stream 0");
      }
    }
    counters += ev.type() == pf::TrackEvent::TYPE_COUNTER;
    instants += ev.type() == pf::TrackEvent::TYPE_INSTANT;
  }
  size_t slices = 0;
  for (const auto& [name, ts] : begins) slices += ts.size();
  EXPECT_EQ(slices, Capture::kSlices);
  EXPECT_EQ(counters, 5);
  EXPECT_EQ(instants, 3);
  // host-b's steps are on the reference clock: 1.02 ms, 2.02 ms, 3.02 ms.
  ASSERT_EQ(begins["step"].size(), 6u);
  std::sort(begins["step"].begin(), begins["step"].end());
  EXPECT_EQ(begins["step"][1], 1'020'000u);
  int processes = 0;
  for (const auto& [uuid, d] : tracks) processes += d.has_process();
  EXPECT_EQ(processes, 2);
}

TEST_F(InteropCli, PerfettoRefusesGzip) {
  const RunResult r = RunPodscope({"export", "--format", "perfetto", "--gzip",
                                   (dir_ / "capture").string(), "-o",
                                   (dir_ / "x.pftrace").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gzip applies to --format chrome only"));
}

TEST_F(InteropCli, KinetoRanksSummarizeAsOneSession) {
  // The per-rank .json.gz files of a PyTorch job, as the profiler left
  // them: the command line imports them (into a cache of the test's own).
  const fs::path data = fs::path(PODSCOPE_SHARED_DATA) / "kineto";
  fs::create_directories(dir_ / "job");
  for (const char* name :
       {"sampled_rank-0.json.gz", "sampled_rank-1.json.gz"}) {
    fs::copy_file(data / name, dir_ / "job" / name);
  }
  setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
  const RunResult r = RunPodscope({"summary", (dir_ / "job").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 processes on 2 hosts, 9,487 events"));
  EXPECT_THAT(r.out,
              HasSubstr("rank0 pid 4037, process 0 of 128, session job"));
  EXPECT_THAT(r.out,
              HasSubstr("rank1 pid 4045, process 1 of 128, session job"));
  EXPECT_THAT(r.out, HasSubstr("device stream  GPU 1 stream 7"));
  EXPECT_THAT(r.out, HasSubstr("ProfilerStep#552"));
  // Kineto's timestamps are wall-clock time on every rank.
  EXPECT_THAT(r.out, HasSubstr("clocks aligned"));
  EXPECT_THAT(r.out, HasSubstr("first event at 2023-04-28 23:51:37.226 UTC"));
  // And they export to Perfetto like any capture (the import is reused).
  const RunResult e =
      RunPodscope({"export", "--format", "perfetto", (dir_ / "job").string(),
                   "-o", (dir_ / "kineto.pftrace").string()});
  unsetenv("XDG_CACHE_HOME");
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  EXPECT_THAT(e.out, HasSubstr("wrote 9,487 events ("));
}

}  // namespace
}  // namespace podscope::tools::testing
