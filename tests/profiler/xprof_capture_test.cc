// Captures of workers that speak XProf's tensorflow.ProfilerService (what
// JAX, TensorFlow and PyTorch/XLA serve), played by test servers on
// loopback whose wall clocks are off by known milliseconds and whose
// collectives end at known instants: every event reaches the host's file,
// the tracer levels and one future start reach every server, the hosts
// are lined up within the stated uncertainty, and the errors people meet
// name the worker and what to do.
#include "src/capture/xprof_capture.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/server.h"
#include "podscope/trace_format/reader.h"
#include "src/capture/host_alignment.h"
#include "trace_file.h"
#include "xprof_test_server.h"

namespace podscope::profiler {
namespace {

namespace fs = std::filesystem;
using testing::FreshDir;
using testing::XProfHostOptions;
using testing::XProfTestServer;

int64_t Clock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// CLOCK_MONOTONIC minus CLOCK_REALTIME: a host whose wall clock is the
// machine's plus `o` has the true offset (to the capture client's
// monotonic clock) of this minus `o`.
int64_t MonotonicMinusRealtime() {
  const int64_t r0 = Clock(CLOCK_REALTIME);
  const int64_t m = Clock(CLOCK_MONOTONIC);
  const int64_t r1 = Clock(CLOCK_REALTIME);
  return m - (r0 + (r1 - r0) / 2);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Hosts {
  std::vector<std::unique_ptr<XProfTestServer>> servers;
  std::vector<std::string> addresses() const {
    std::vector<std::string> out;
    for (const auto& s : servers) out.push_back(s->address());
    return out;
  }
};

Hosts StartHosts(
    const std::vector<int64_t>& offsets, int64_t jitter_ns = 0,
    XProfHostOptions::Mode mode = XProfHostOptions::Mode::kNormal) {
  Hosts h;
  for (size_t i = 0; i < offsets.size(); ++i) {
    XProfHostOptions o;
    o.host_name = "tpu-host-" + std::to_string(i);
    o.clock_offset_ns = offsets[i];
    o.collective_jitter_ns = jitter_ns;
    o.jitter_seed = i + 1;
    o.mode = mode;
    h.servers.push_back(std::make_unique<XProfTestServer>(o));
    EXPECT_TRUE(h.servers.back()->ok());
  }
  return h;
}

CaptureOptions Options(const std::vector<std::string>& workers,
                       const std::string& dir) {
  CaptureOptions o;
  o.workers = workers;
  o.logdir = dir;
  o.session = "xprof";
  o.duration_ms = 300;
  o.clock_probes = 2;
  o.connect.connect_timeout_ms = 2000;
  return o;
}

// Milliseconds apart, as NTP leaves hosts.
const std::vector<int64_t> kOffsets = {0, 2'500'000, -3'750'000, 7'125'000};

TEST(XProfCapture, EveryEventOfEveryHostReachesItsFile) {
  Hosts hosts = StartHosts(kOffsets);
  CaptureOptions o = Options(hosts.addresses(), FreshDir("xprof-events"));
  o.also_xplane = true;
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 4);
  const std::string manifest = ReadAll(result->manifest_path);
  for (size_t i = 0; i < hosts.servers.size(); ++i) {
    const WorkerResult& w = result->workers[i];
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_EQ(w.protocol, "xprof");
    EXPECT_EQ(w.host, "tpu-host-" + std::to_string(i));
    EXPECT_EQ(fs::path(w.path).filename(), w.host + ".podtrace");
    auto file = testing::ReadTraceFile(w.path);
    ASSERT_NE(file.reader, nullptr) << w.path;
    EXPECT_TRUE(file.reader->report().has_index);
    EXPECT_EQ(file.reader->known_event_count(),
              hosts.servers[i]->events_sent());
    EXPECT_EQ(file.reader->metadata().host(), w.host);
    EXPECT_EQ(file.reader->metadata().attributes().at("capture_protocol"),
              "xprof");
    // TensorBoard's run folder holds the XSpace as it came.
    EXPECT_EQ(w.xplane_path, (fs::path(o.logdir) / "plugins" / "profile" /
                              "xprof" / (w.host + ".xplane.pb"))
                                 .string());
    EXPECT_TRUE(fs::exists(w.xplane_path));
    EXPECT_NE(manifest.find("\"address\": \"" + w.address +
                            "\", \"ok\": true, \"protocol\": \"xprof\", "
                            "\"producer\": \"tensorflow.ProfilerService"),
              std::string::npos)
        << manifest;
  }
}

TEST(XProfCapture, TracerLevelsAndOneFutureStartReachEveryServer) {
  Hosts hosts = StartHosts({0, 1'000'000, -2'000'000});
  CaptureOptions o = Options(hosts.addresses(), FreshDir("xprof-levels"));
  o.host_tracer_level = 3;
  o.device_tracer_level = 0;
  o.python_tracer_level = 1;
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  uint64_t start = 0;
  for (auto& server : hosts.servers) {
    const auto requests = server->requests();
    ASSERT_EQ(requests.size(), 1u);
    const tensorflow::ProfileRequest& r = requests[0];
    EXPECT_TRUE(r.emit_xspace());
    EXPECT_EQ(r.opts().version(), 1u);
    EXPECT_EQ(r.opts().host_tracer_level(), 3u);
    EXPECT_EQ(r.opts().device_tracer_level(), 0u);
    EXPECT_EQ(r.opts().python_tracer_level(), 1u);
    EXPECT_EQ(r.opts().duration_ms(), 300u);
    EXPECT_EQ(r.duration_ms(), 300u);
    // In the future when it arrived, on the machine's clock (the client's).
    EXPECT_GT(static_cast<int64_t>(r.opts().start_timestamp_ns()),
              server->received_at()[0]);
    if (start == 0) start = r.opts().start_timestamp_ns();
    EXPECT_EQ(r.opts().start_timestamp_ns(), start);
  }
}

TEST(XProfCapture, CollectivesLineHostsUpWithinMicroseconds) {
  // Collective ends that coincide within 1 us (+-500 ns on each host).
  Hosts hosts = StartHosts(kOffsets, /*jitter_ns=*/500);
  const int64_t mono_minus_real = MonotonicMinusRealtime();
  auto result =
      CaptureWorkers(Options(hosts.addresses(), FreshDir("xprof-collectives")));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 4);
  const WorkerResult& ref = result->workers[0];
  for (size_t i = 0; i < kOffsets.size(); ++i) {
    const WorkerResult& w = result->workers[i];
    ASSERT_EQ(w.alignment, "collectives") << w.alignment_note;
    ASSERT_EQ(w.clock.size(), 1u);
    // Between hosts: what lining them up needs.
    const int64_t relative = w.clock[0].offset_ns - ref.clock[0].offset_ns;
    const int64_t error = relative - -(kOffsets[i] - kOffsets[0]);
    EXPECT_LE(std::llabs(error), 5'000) << "host " << i;
    EXPECT_LE(std::llabs(error), w.alignment_relative_uncertainty_ns +
                                     ref.alignment_relative_uncertainty_ns)
        << "host " << i << ": the stated uncertainty understates";
    // Against the client's clock: within the stated bound.
    const int64_t truth = mono_minus_real - kOffsets[i];
    EXPECT_LE(std::llabs(w.clock[0].offset_ns - truth),
              w.alignment_uncertainty_ns)
        << "host " << i;
    auto file = testing::ReadTraceFile(w.path);
    ASSERT_NE(file.reader, nullptr);
    ASSERT_EQ(file.reader->clock().offsets_size(), 1);
    EXPECT_EQ(file.reader->clock().offsets(0).offset_ns(),
              w.clock[0].offset_ns);
    EXPECT_EQ(file.reader->clock().offsets(0).reference(), "capture client");
    EXPECT_EQ(file.reader->metadata().attributes().at("clock_alignment"),
              "collectives");
  }
  const std::string manifest = ReadAll(result->manifest_path);
  EXPECT_NE(manifest.find("\"alignment\": \"collectives\""), std::string::npos);
}

TEST(XProfCapture, RpcIntervalsContainTheTruth) {
  Hosts hosts = StartHosts(kOffsets);
  const int64_t mono_minus_real = MonotonicMinusRealtime();
  CaptureOptions o = Options(hosts.addresses(), FreshDir("xprof-rpc"));
  o.align = "rpc";
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  for (size_t i = 0; i < kOffsets.size(); ++i) {
    const WorkerResult& w = result->workers[i];
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_EQ(w.alignment, "rpc");
    EXPECT_GT(w.alignment_uncertainty_ns, 0);
    const int64_t truth = mono_minus_real - kOffsets[i];
    EXPECT_LE(std::llabs(w.clock[0].offset_ns - truth),
              w.alignment_uncertainty_ns)
        << "host " << i;
  }
}

TEST(XProfCapture, WallclockStatesNoUncertainty) {
  Hosts hosts = StartHosts({0});
  CaptureOptions o = Options(hosts.addresses(), FreshDir("xprof-wall"));
  o.align = "wallclock";
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  const WorkerResult& w = result->workers[0];
  ASSERT_TRUE(w.ok) << w.error;
  EXPECT_EQ(w.alignment, "wallclock");
  EXPECT_EQ(w.alignment_uncertainty_ns, -1);
}

TEST(XProfCapture, ACancelledCaptureTerminatesTheProfileAndKeepsWhatItGot) {
  Hosts hosts = StartHosts({0, 1'000'000});
  CaptureOptions o = Options(hosts.addresses(), FreshDir("xprof-cancel"));
  o.duration_ms = 60'000;
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  std::thread canceller([&] {
    // Once both servers are recording.
    while (hosts.servers[0]->requests().empty() ||
           hosts.servers[1]->requests().empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    cancel = true;
  });
  const int64_t t0 = Clock(CLOCK_MONOTONIC);
  auto result = CaptureWorkers(o);
  canceller.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(Clock(CLOCK_MONOTONIC) - t0, 30'000'000'000);
  EXPECT_TRUE(result->cancelled);
  for (size_t i = 0; i < 2; ++i) {
    const WorkerResult& w = result->workers[i];
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_GE(hosts.servers[i]->terminates(), 1);
    auto file = testing::ReadTraceFile(w.path);
    ASSERT_NE(file.reader, nullptr);
    EXPECT_EQ(file.reader->known_event_count(),
              hosts.servers[i]->events_sent());
  }
}

TEST(XProfCapture, AServerThatAnswersWithToolDataIsReadToo) {
  Hosts hosts = StartHosts({0}, 0, XProfHostOptions::Mode::kToolData);
  auto result =
      CaptureWorkers(Options(hosts.addresses(), FreshDir("xprof-tool-data")));
  ASSERT_TRUE(result.ok()) << result.status();
  const WorkerResult& w = result->workers[0];
  ASSERT_TRUE(w.ok) << w.error;
  auto file = testing::ReadTraceFile(w.path);
  ASSERT_NE(file.reader, nullptr);
  EXPECT_EQ(file.reader->known_event_count(), hosts.servers[0]->events_sent());
}

// The failure of the only worker of a capture.
std::string OnlyError(CaptureOptions o) {
  auto result = CaptureWorkers(o);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return "";
  EXPECT_EQ(result->answered(), 0);
  const std::string& e = result->workers[0].error;
  EXPECT_NE(e.find(o.workers[0]), std::string::npos) << e;
  return e;
}

TEST(XProfCaptureErrors, AServerThatSpeaksNeitherProtocol) {
  testing::RawGrpcServer nothing;
  ASSERT_TRUE(nothing.ok());
  const std::string e =
      OnlyError(Options({nothing.address()}, FreshDir("xprof-neither")));
  EXPECT_NE(e.find("speaks neither Podscope's profiler service nor XProf's"),
            std::string::npos)
      << e;
}

// What File › Capture… shows before a capture: each address's protocol,
// found without recording anything and without handing a token to a
// server that checks none.
TEST(XProfCapture, EachAddressSaysWhichProtocolItSpeaks) {
  auto podscope = StartServer(0);
  ASSERT_TRUE(podscope.ok()) << podscope.status();
  Hosts hosts = StartHosts({0});
  testing::RawGrpcServer nothing;
  ASSERT_TRUE(nothing.ok());
  // No token named: this user's token file goes to loopback workers.
  ConnectOptions connect;
  connect.connect_timeout_ms = 1000;
  const std::vector<std::string> addresses = {hosts.addresses()[0],
                                              (*podscope)->address(),
                                              nothing.address(), "127.0.0.1:1"};
  const std::vector<WorkerProtocol> found =
      FindWorkerProtocols(addresses, connect);
  ASSERT_EQ(found.size(), 4u);
  for (size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].address, addresses[i]);
  }
  EXPECT_EQ(found[0].protocol, "xprof") << found[0].error;
  EXPECT_TRUE(found[0].error.empty());
  EXPECT_EQ(found[1].protocol, "podscope") << found[1].error;
  EXPECT_EQ(found[1].pid, static_cast<int64_t>(getpid()));
  EXPECT_FALSE(found[1].producer.empty());
  EXPECT_TRUE(found[2].protocol.empty());
  EXPECT_NE(found[2].error.find(nothing.address() +
                                ": speaks neither Podscope's profiler "
                                "service nor XProf's"),
            std::string::npos)
      << found[2].error;
  EXPECT_TRUE(found[3].protocol.empty());
  EXPECT_NE(found[3].error.find("127.0.0.1:1: no connection"),
            std::string::npos)
      << found[3].error;
  // Nothing was recorded, and the XProf server saw no token.
  EXPECT_TRUE(hosts.servers[0]->requests().empty());
  EXPECT_FALSE(hosts.servers[0]->saw_token());
  // A capture right after it is not ended by the check.
  CaptureOptions o = Options(hosts.addresses(), FreshDir("xprof-after-check"));
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->workers[0].ok) << result->workers[0].error;
  EXPECT_GT(result->workers[0].events, 0u);
}

TEST(XProfCaptureErrors, AServerAlreadyProfiling) {
  Hosts hosts = StartHosts({0}, 0, XProfHostOptions::Mode::kBusy);
  const std::string e =
      OnlyError(Options(hosts.addresses(), FreshDir("xprof-busy")));
  EXPECT_NE(e.find("is already profiling"), std::string::npos) << e;
  EXPECT_NE(e.find("Another profiling session active."), std::string::npos)
      << e;
}

TEST(XProfCaptureErrors, ATraceAboveTheMessageLimitSaysHowToRaiseIt) {
  Hosts hosts = StartHosts({0}, 0, XProfHostOptions::Mode::kHugeXSpace);
  CaptureOptions o = Options(hosts.addresses(), FreshDir("xprof-huge"));
  o.connect.max_message_mb = 1;
  const std::string e = OnlyError(o);
  EXPECT_NE(e.find("larger than this client's message limit of 1 MiB"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--max_message_mb"), std::string::npos) << e;
  // Raised as it says, the same answer is taken.
  o.connect.max_message_mb = 8;
  o.session = "raised";
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->workers[0].ok) << result->workers[0].error;
}

TEST(XProfCaptureErrors, AnEmptyTrace) {
  Hosts hosts = StartHosts({0}, 0, XProfHostOptions::Mode::kEmpty);
  const std::string e =
      OnlyError(Options(hosts.addresses(), FreshDir("xprof-empty")));
  EXPECT_NE(e.find("recorded nothing (empty_trace)"), std::string::npos) << e;
}

TEST(XProfCaptureErrors, TlsWhereTheServerSpeaksPlaintext) {
  Hosts hosts = StartHosts({0});
  const std::string dir = FreshDir("xprof-tls");
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
      "-keyout " +
      dir + "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl is needed: " << cmd;
  CaptureOptions o = Options(hosts.addresses(), dir);
  o.connect.tls_ca_file = dir + "/cert.pem";
  o.connect.connect_timeout_ms = 500;
  const std::string e = OnlyError(o);
  EXPECT_NE(e.find("speaks plaintext only: leave out --tls_ca"),
            std::string::npos)
      << e;
}

TEST(XProfCaptureErrors, ATokenIsNotHandedToAServerThatChecksNone) {
  Hosts hosts = StartHosts({0});
  CaptureOptions o = Options(hosts.addresses(), FreshDir("xprof-token"));
  o.connect.token = "secret";
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  const WorkerResult& w = result->workers[0];
  ASSERT_TRUE(w.ok) << w.error;
  EXPECT_FALSE(hosts.servers[0]->saw_token());
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("token was not sent"), std::string::npos);
}

TEST(XProfCaptureErrors, GarbageToolDataIsRejectedCleanly) {
  Hosts hosts = StartHosts({0}, 0, XProfHostOptions::Mode::kBadToolData);
  const std::string e =
      OnlyError(Options(hosts.addresses(), FreshDir("xprof-bad-tool-data")));
  EXPECT_NE(
      e.find("its tool_data 'tpu-host-0.xplane.pb' is not a valid XSpace"),
      std::string::npos)
      << e;
}

TEST(XProfCaptureErrors, AGarbageAnswerIsRejectedCleanly) {
  // Field 8 (the XSpace) with a length running past the end.
  testing::RawGrpcServer garbage(std::string("\x42\xff\xff\xff\x0f\x01", 6));
  ASSERT_TRUE(garbage.ok());
  CaptureOptions o = Options({garbage.address()}, FreshDir("xprof-garbage"));
  const std::string e = OnlyError(o);
  EXPECT_NE(
      e.find("answered Profile with bytes that are not a ProfileResponse"),
      std::string::npos)
      << e;
  // Nothing was written for it.
  EXPECT_FALSE(fs::exists(fs::path(o.logdir) / "xprof"));
}

TEST(XProfCapture, PodscopeCollectiveIdsAndXlaOpsAreBothKeys) {
  namespace xp = tensorflow::profiler;
  xp::XSpace space;
  xp::XPlane* plane = space.add_planes();
  (*plane->mutable_event_metadata())[1].set_name("allreduce");
  (*plane->mutable_event_metadata())[2].set_name("%all-gather.7");
  (*plane->mutable_event_metadata())[3].set_name("all-reduce-start.2");
  (*plane->mutable_stat_metadata())[1].set_name("collective_id");
  (*plane->mutable_stat_metadata())[2].set_name("group_id");
  (*plane->mutable_stat_metadata())[3].set_name("g0:17");
  xp::XLine* line = plane->add_lines();
  line->set_timestamp_ns(1'000'000);
  auto add = [&](int64_t metadata, int64_t at_ns) {
    xp::XEvent* e = line->add_events();
    e->set_metadata_id(metadata);
    e->set_offset_ps(at_ns * 1000);
    e->set_duration_ps(1000);
    return e;
  };
  // A Podscope all-reduce, its id by value and by reference.
  xp::XStat* id = add(1, 10)->add_stats();
  id->set_metadata_id(1);
  id->set_str_value("g0:16");
  id = add(1, 20)->add_stats();
  id->set_metadata_id(1);
  id->set_ref_value(3);
  // XLA's, by step, twice in step 4; the start of an async pair is none.
  for (int64_t at : {30, 40}) {
    xp::XStat* group = add(2, at)->add_stats();
    group->set_metadata_id(2);
    group->set_int64_value(4);
  }
  add(3, 50);
  uint64_t events = 0;
  internal::AlignInput in = internal::AlignInputOf(space, 0, 0, 0, &events);
  std::sort(in.collective_ends.begin(), in.collective_ends.end());
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"4/%all-gather.7/0", 1'000'031},
      {"4/%all-gather.7/1", 1'000'041},
      {"id/g0:16", 1'000'011},
      {"id/g0:17", 1'000'021}};
  EXPECT_EQ(in.collective_ends, expected);
}

TEST(XProfCaptureErrors, AbsurdTimesInAnXSpaceAreLeftOutOfAlignment) {
  namespace xp = tensorflow::profiler;
  xp::XSpace space;
  xp::XPlane* plane = space.add_planes();
  (*plane->mutable_event_metadata())[1].set_name("all-reduce.1");
  const int64_t sane = 1'800'000'000'000'000'000;
  auto add = [&](int64_t ts, std::vector<std::pair<int64_t, int64_t>> evs) {
    xp::XLine* line = plane->add_lines();
    line->set_timestamp_ns(ts);
    for (auto [offset_ps, duration_ps] : evs) {
      xp::XEvent* e = line->add_events();
      e->set_metadata_id(1);
      e->set_offset_ps(offset_ps);
      e->set_duration_ps(duration_ps);
    }
  };
  add(INT64_MAX, {{0, INT64_MAX}, {INT64_MIN, INT64_MAX}});
  add(INT64_MIN, {{0, INT64_MAX}, {INT64_MAX, INT64_MAX}});
  add(sane, {{0, 1000}});
  uint64_t events = 0;
  const internal::AlignInput in =
      internal::AlignInputOf(space, 1000, 2000, 0, &events);
  EXPECT_EQ(events, 5u);
  // Only the one event that is a plausible epoch time bounds the offset.
  ASSERT_TRUE(in.has_rpc);
  EXPECT_EQ(in.rpc_lo_ns, 1000 - sane);
  EXPECT_EQ(in.rpc_hi_ns, 2000 - (sane + 1));
  ASSERT_EQ(in.collective_ends.size(), 1u);
  EXPECT_EQ(in.collective_ends[0].second, sane + 1);
  // Nothing overflows when such hosts are fitted together.
  const auto aligned = internal::AlignHosts({in, in, in});
  EXPECT_EQ(aligned.size(), 3u);
}

}  // namespace
}  // namespace podscope::profiler
