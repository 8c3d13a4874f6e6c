// The profiler server as a client sees it: a real gRPC server on loopback
// inside this process, real clients (the capture library and raw stubs),
// real files.
#include "podscope/profiler/server.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/profiler_service.grpc.pb.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/profiler/user_token.h"
#include "podscope/profiler/xprof_service.grpc.pb.h"
#include "podscope/trace_format/clock_model.h"
#include "trace_file.h"
#include "workload.h"

namespace podscope::profiler {
namespace {

namespace pb = ::podscope::profiler::proto;
using testing::FreshDir;
using testing::ReadTraceFile;
using testing::Workload;

std::unique_ptr<pb::ProfilerService::Stub> Stub(const std::string& address) {
  return pb::ProfilerService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

// What a client of this user sends to a server on loopback, as the
// capture client does (ClientToken).
void AddUserToken(grpc::ClientContext* ctx) {
  auto token = UserToken(/*create=*/false);
  ASSERT_TRUE(token.ok()) << token.status();
  ctx->AddMetadata("authorization", "Bearer " + *token);
}

std::unique_ptr<ProfilerServer> Serve(const ServerOptions& options = {}) {
  auto server = StartServer(0, options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Server, DefaultsToLoopbackAndAnswersInfo) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->address(), "127.0.0.1:" + std::to_string(server->port()));
  grpc::ClientContext ctx;
  AddUserToken(&ctx);
  pb::ProcessInfo info;
  ASSERT_TRUE(Stub(server->address())->GetInfo(&ctx, {}, &info).ok());
  EXPECT_EQ(info.pid(), getpid());
  EXPECT_FALSE(info.host().empty());
  EXPECT_GT(info.clock().monotonic_ns(), 0);
  EXPECT_FALSE(info.capturing());
  // Not reachable on the machine's other addresses.
  ifaddrs* addrs = nullptr;
  ASSERT_EQ(getifaddrs(&addrs), 0);
  for (ifaddrs* a = addrs; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    sockaddr_in sin = *reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if ((ntohl(sin.sin_addr.s_addr) >> 24) == 127) continue;
    sin.sin_port = htons(static_cast<uint16_t>(server->port()));
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0)
        << "the server answers on " << inet_ntoa(sin.sin_addr);
    close(fd);
  }
  freeifaddrs(addrs);
}

// Clock probes on the server's UDP port: answered only with the key that
// GetInfo hands out, with the server's clock at receive and send.
TEST(Server, ClockProbesOnTheUdpPortNeedTheKey) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  grpc::ClientContext ctx;
  AddUserToken(&ctx);
  pb::ProcessInfo info;
  ASSERT_TRUE(Stub(server->address())->GetInfo(&ctx, {}, &info).ok());
  ASSERT_GT(info.probe_port(), 0);
  ASSERT_EQ(info.probe_key().size(), 16u);
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(info.probe_port()));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  timeval wait{0, 300'000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  auto probe = [&](const std::string& key, int64_t sent, std::string* reply) {
    std::string request = "PSPROBE1" + key;
    for (int i = 0; i < 8; ++i) {
      request.push_back(
          static_cast<char>((static_cast<uint64_t>(sent) >> (8 * i)) & 0xff));
    }
    request.append(8, '\0');
    EXPECT_EQ(send(fd, request.data(), request.size(), 0), 40);
    char buf[64];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    reply->assign(buf, static_cast<size_t>(n));
    return true;
  };
  auto field = [](const std::string& r, int at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
      v |= uint64_t{static_cast<unsigned char>(r[at + i])} << (8 * i);
    }
    return static_cast<int64_t>(v);
  };
  std::string reply;
  EXPECT_FALSE(probe(std::string(16, 'x'), 1, &reply))
      << "answered a wrong key";
  const int64_t before = MonotonicNs();
  ASSERT_TRUE(probe(info.probe_key(), 12345, &reply));
  const int64_t after = MonotonicNs();
  ASSERT_EQ(reply.size(), 40u);
  EXPECT_EQ(reply.substr(0, 8), "PSPROBR1");
  EXPECT_EQ(field(reply, 8), 12345);
  const int64_t received = field(reply, 16), sent = field(reply, 24);
  // Same machine, no skew: the server's clock is this one.
  EXPECT_GE(received, before);
  EXPECT_LE(received, sent);
  EXPECT_LE(sent, after);
  close(fd);
  // The capture client takes this path: its estimate's round trip is that
  // of a UDP datagram, not a gRPC call.
  auto estimate = MeasureClockOffset(server->address(), {}, 16);
  ASSERT_TRUE(estimate.ok()) << estimate.status();
  // One clock on both sides: the truth is 0, inside the stated bound.
  EXPECT_LE(std::abs(estimate->offset_ns), estimate->uncertainty_ns);
  EXPECT_LT(estimate->round_trip_ns, 1'000'000);
}

TEST(Server, NonLoopbackBindRequiresAToken) {
  ServerOptions o;
  o.bind_address = "0.0.0.0";
  auto server = StartServer(0, o);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(server.status().message().find("token"), std::string::npos);
  o.token = "s3cret";
  server = StartServer(0, o);
  EXPECT_TRUE(server.ok()) << server.status();
}

TEST(Server, PortInUseIsAnError) {
  auto first = Serve();
  ASSERT_NE(first, nullptr);
  auto second = StartServer(first->port());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(std::to_string(first->port())),
            std::string::npos);
}

TEST(Server, CaptureStreamsACompleteFileWithClockOffsets) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  Workload work;
  CaptureOptions o;
  o.workers = {server->address()};
  o.logdir = FreshDir("capture");
  o.duration_ms = 400;
  o.session = "s1";
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 1) << result->workers[0].error;
  const WorkerResult& w = result->workers[0];
  EXPECT_EQ(w.pid, getpid());
  EXPECT_EQ(std::filesystem::path(w.path).parent_path().string(),
            o.logdir + "/s1");
  ASSERT_GE(w.clock.size(), 2u);
  // Same machine, same clock: the truth is 0, and every point of the fit
  // states a bound that holds it.
  for (const ClockEstimate& c : w.clock) {
    EXPECT_LE(std::abs(c.offset_ns), c.uncertainty_ns) << c.local_ns;
  }

  auto file = ReadTraceFile(w.path);
  ASSERT_NE(file.reader, nullptr);
  EXPECT_TRUE(file.reader->report().has_index);
  EXPECT_TRUE(file.reader->report().skipped.empty());
  EXPECT_EQ(file.reader->metadata().session_id(), "s1");
  EXPECT_GT(file.SlicesNamed("work").size(), 100u);
  EXPECT_EQ(file.reader->clock().offsets_size(),
            static_cast<int>(w.clock.size()));
  // The slices lie within the capture window.
  const auto slices = file.SlicesNamed("work");
  EXPECT_LT(slices.back().start_ns - slices.front().start_ns, 2'000'000'000);

  const std::string manifest = ReadAll(result->manifest_path);
  EXPECT_NE(manifest.find("\"answered\": 1"), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"offset_ns\""), std::string::npos);
  EXPECT_NE(manifest.find(server->address()), std::string::npos);
}

// Numeric addresses are dialled without name resolution ("ipv4:" and
// "ipv6:" targets): both families capture, with the same authority.
TEST(Server, CaptureOverIpv6Loopback) {
  ServerOptions so;
  so.bind_address = "::1";
  auto server = StartServer(0, so);
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback: " << server.status();
  Workload work;
  CaptureOptions o;
  o.workers = {(*server)->address()};
  ASSERT_EQ(o.workers[0].rfind("[::1]:", 0), 0u) << o.workers[0];
  o.logdir = FreshDir("capture-v6");
  o.duration_ms = 300;
  o.session = "v6";
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 1) << result->workers[0].error;
  EXPECT_EQ(result->workers[0].pid, getpid());
  EXPECT_GT(ReadTraceFile(result->workers[0].path).SlicesNamed("work").size(),
            10u);
}

TEST(Server, ConcurrentClientsShareOneCapture) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  Workload work;
  const std::string dir = FreshDir("shared");
  absl::StatusOr<CaptureResult> a, b;
  std::thread ta([&] {
    CaptureOptions o;
    o.workers = {server->address()};
    o.logdir = dir + "/a";
    o.duration_ms = 600;
    a = CaptureWorkers(o);
  });
  std::thread tb([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    CaptureOptions o;
    o.workers = {server->address()};
    o.logdir = dir + "/b";
    o.duration_ms = 200;
    b = CaptureWorkers(o);
  });
  ta.join();
  tb.join();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->answered(), 1) << a->workers[0].error;
  ASSERT_EQ(b->answered(), 1) << b->workers[0].error;
  auto fa = ReadTraceFile(a->workers[0].path);
  auto fb = ReadTraceFile(b->workers[0].path);
  ASSERT_NE(fa.reader, nullptr);
  ASSERT_NE(fb.reader, nullptr);
  // One recording: the late client got it from its start.
  EXPECT_EQ(fa.reader->metadata().session_id(),
            fb.reader->metadata().session_id());
  EXPECT_EQ(fa.reader->metadata().start_monotonic_ns(),
            fb.reader->metadata().start_monotonic_ns());
  EXPECT_EQ(fa.SlicesNamed("work").size(), fb.SlicesNamed("work").size());
  EXPECT_TRUE(fb.reader->report().has_index);
}

TEST(Server, BadRequestsGetErrorsAndTheServerStaysUp) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  auto stub = Stub(server->address());
  auto capture_status = [&](int64_t duration_ms, const std::string& session) {
    grpc::ClientContext ctx;
    AddUserToken(&ctx);
    pb::CaptureRequest r;
    r.set_duration_ms(duration_ms);
    r.set_session_id(session);
    auto reader = stub->Capture(&ctx, r);
    pb::CaptureData d;
    while (reader->Read(&d)) {
    }
    return reader->Finish();
  };
  grpc::Status s = capture_status(-5, "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("duration_ms"), std::string::npos);
  s = capture_status(int64_t{1} << 40, "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("limit"), std::string::npos);
  s = capture_status(100, "../../etc");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  {
    grpc::ClientContext ctx;
    AddUserToken(&ctx);
    pb::StopRequest r;
    r.set_session_id("no-such-session");
    pb::StopResponse resp;
    s = stub->Stop(&ctx, r, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  }
  // Garbage bytes on the port.
  {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(static_cast<uint16_t>(server->port()));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
    const std::string junk =
        "GET / HTTP/1.1\r\n\r\n\x00\xff\x13garbage-garbage";
    // The server may close the connection after the first bytes; a write
    // after that must fail with EPIPE, not kill the test with SIGPIPE.
    for (int i = 0; i < 50; ++i) {
      if (send(fd, junk.data(), junk.size(), MSG_NOSIGNAL) < 0) break;
    }
    close(fd);
  }
  // A client that goes away in the middle of a stream.
  {
    Workload work;
    grpc::ClientContext ctx;
    AddUserToken(&ctx);
    pb::CaptureRequest r;
    r.set_duration_ms(5000);
    auto reader = stub->Capture(&ctx, r);
    pb::CaptureData d;
    ASSERT_TRUE(reader->Read(&d));
    EXPECT_FALSE(d.records().empty());
    ctx.TryCancel();
    while (reader->Read(&d)) {
    }
    reader->Finish();
  }
  // The capture ends once its only client is gone; then a new one works.
  for (int i = 0; i < 100 && IsTracing(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(IsTracing());
  grpc::ClientContext ctx;
  AddUserToken(&ctx);
  pb::ProcessInfo info;
  ASSERT_TRUE(stub->GetInfo(&ctx, {}, &info).ok());
  EXPECT_TRUE(capture_status(100, "again").ok());
}

TEST(Server, StopEndsACaptureThatRunsUntilStopped) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  auto stub = Stub(server->address());
  grpc::ClientContext ctx;
  AddUserToken(&ctx);
  pb::CaptureRequest r;
  r.set_duration_ms(0);
  r.set_session_id("open-ended");
  auto reader = stub->Capture(&ctx, r);
  pb::CaptureData d;
  ASSERT_TRUE(reader->Read(&d));
  EXPECT_EQ(d.session_id(), "open-ended");
  {
    grpc::ClientContext sctx;
    AddUserToken(&sctx);
    pb::StopRequest sr;
    sr.set_session_id("open-ended");
    pb::StopResponse resp;
    ASSERT_TRUE(stub->Stop(&sctx, sr, &resp).ok());
  }
  bool done = d.done();
  while (reader->Read(&d)) done = done || d.done();
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_TRUE(done);
}

// A process that records itself (StartTrace) can still be captured: the
// capture follows its trace from the first byte for as long as the capture
// lasts, and the local trace goes on untouched.
TEST(Server, ACaptureFollowsATraceTheProcessRecordsItself) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  const std::string dir = FreshDir("local-first");
  TraceOptions local;
  local.session_id = "local";
  ASSERT_TRUE(StartTrace(dir, local).ok());
  { PODSCOPE_TRACE("before_capture"); }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::atomic<bool> capturing{true};
  std::thread marks([&] {
    while (capturing.load()) {
      { PODSCOPE_TRACE("during_capture"); }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  CaptureOptions o;
  o.workers = {server->address()};
  o.logdir = FreshDir("followed");
  o.duration_ms = 300;
  o.session = "remote";
  auto result = CaptureWorkers(o);
  capturing = false;
  marks.join();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 1) << result->workers[0].error;
  // The local trace is still recording; later events are not in the
  // captured file.
  EXPECT_TRUE(IsTracing());
  { PODSCOPE_TRACE("after_capture"); }
  auto stopped = StopTrace();
  ASSERT_TRUE(stopped.ok()) << stopped.status();

  auto captured = ReadTraceFile(result->workers[0].path);
  ASSERT_NE(captured.reader, nullptr);
  const auto report = captured.reader->report();
  EXPECT_TRUE(report.intact()) << "index problem: " << report.index_problem;
  EXPECT_TRUE(report.index_used);
  EXPECT_EQ(captured.reader->metadata().session_id(), "local");
  EXPECT_EQ(captured.reader->clock().offsets_size(),
            static_cast<int>(result->workers[0].clock.size()));
  // Only the capture's window: not what the trace recorded before it.
  EXPECT_TRUE(captured.SlicesNamed("before_capture").empty());
  auto marks_seen = captured.SlicesNamed("during_capture");
  const size_t during = marks_seen.size();
  // A mark every 5 ms (more on a loaded machine) through the whole 300 ms
  // window, none missing in between.
  ASSERT_GE(during, 2u);
  std::sort(
      marks_seen.begin(), marks_seen.end(),
      [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  EXPECT_GE(marks_seen.back().start_ns - marks_seen.front().start_ns,
            250'000'000);
  for (size_t i = 1; i < during; ++i) {
    EXPECT_LT(marks_seen[i].start_ns - marks_seen[i - 1].start_ns, 100'000'000)
        << "a gap after mark " << i - 1;
  }
  EXPECT_TRUE(captured.SlicesNamed("after_capture").empty());
  // The index covers exactly what the file holds: the same events as a
  // scan of the same records.
  const uint64_t indexed = captured.reader->known_event_count();
  uint64_t scanned = 0;
  for (const auto& t : captured.tracks) scanned += t.events.event_count();
  EXPECT_EQ(indexed, scanned);

  auto whole = ReadTraceFile(*stopped);
  ASSERT_NE(whole.reader, nullptr);
  EXPECT_TRUE(whole.reader->report().intact());
  EXPECT_EQ(whole.SlicesNamed("after_capture").size(), 1u);
  EXPECT_GE(whole.SlicesNamed("during_capture").size(), during);
}

// When the process's own trace ends during the capture, the capture ends
// with it, complete: it holds the trace's events from the capture's start
// on, exactly as the trace's own file does.
TEST(Server, ACapturedLocalTraceThatEndsEndsTheCapture) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  const std::string dir = FreshDir("local-ends");
  ASSERT_TRUE(StartTrace(dir).ok());
  Workload work;
  std::string local_path;
  // The local trace stops once the capture streams (however long a loaded
  // machine takes to start it), and a little after.
  std::atomic<bool> streaming{false};
  std::thread stopper([&] {
    for (int i = 0; i < 600 && !streaming.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto p = StopTrace();
    if (p.ok()) local_path = *p;
  });
  CaptureOptions o;
  o.workers = {server->address()};
  o.logdir = FreshDir("local-ends-capture");
  o.duration_ms = 10000;
  o.progress = [&](const CaptureProgress& p) {
    if (p.streaming > 0 && p.events > 0) streaming = true;
  };
  const auto started = std::chrono::steady_clock::now();
  auto result = CaptureWorkers(o);
  const auto took = std::chrono::steady_clock::now() - started;
  stopper.join();
  ASSERT_FALSE(local_path.empty());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 1) << result->workers[0].error;
  EXPECT_LT(took, std::chrono::seconds(8)) << "the capture outlived the trace";
  auto captured = ReadTraceFile(result->workers[0].path);
  auto local_file = ReadTraceFile(local_path);
  ASSERT_NE(captured.reader, nullptr);
  ASSERT_NE(local_file.reader, nullptr);
  EXPECT_TRUE(captured.reader->report().intact());
  const auto captured_work = captured.SlicesNamed("work");
  const auto local_work = local_file.SlicesNamed("work");
  ASSERT_FALSE(captured_work.empty());
  EXPECT_LT(captured_work.size(), local_work.size());
  // The captured scopes are the local file's from the capture's first on.
  size_t first = 0;
  while (first < local_work.size() &&
         local_work[first].start_ns != captured_work[0].start_ns) {
    ++first;
  }
  ASSERT_LT(first, local_work.size());
  ASSERT_EQ(local_work.size() - first, captured_work.size());
  for (size_t i = 0; i < captured_work.size(); ++i) {
    EXPECT_EQ(captured_work[i].start_ns, local_work[first + i].start_ns);
    EXPECT_EQ(captured_work[i].duration_ns, local_work[first + i].duration_ns);
  }
}

// A process that has recorded itself for a while, then a short capture at
// another level and with stack samples: the capture holds only its window,
// at its level and with its samples; the local trace keeps its options
// (verbose events appear in it only while the capture asked for them).
TEST(Server, ACaptureOfASelfRecordingProcessHoldsItsWindowAtItsLevel) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  const std::string dir = FreshDir("local-window");
  TraceOptions local;
  local.level = Level::kInfo;
  ASSERT_TRUE(StartTrace(dir, local).ok());
  std::atomic<bool> run{true};
  std::thread marks([&] {
    SetThreadName("marks");
    while (run.load()) {
      {
        PODSCOPE_TRACE("info_mark");
        // Burn CPU time so that the stack sampler's timer fires.
        const int64_t until = MonotonicNs() + 1'000'000;
        while (MonotonicNs() < until) {
        }
      }
      { PODSCOPE_TRACE_LEVEL(Level::kVerbose, "verbose_mark"); }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CaptureOptions o;
  o.workers = {server->address()};
  o.logdir = FreshDir("local-window-capture");
  o.duration_ms = 400;
  o.level = 3;
  o.sampling_hz = 997;
  const int64_t capture_start = MonotonicNs();
  auto result = CaptureWorkers(o);
  const int64_t capture_end = MonotonicNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  run = false;
  marks.join();
  auto stopped = StopTrace();
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 1) << result->workers[0].error;

  auto captured = ReadTraceFile(result->workers[0].path);
  ASSERT_NE(captured.reader, nullptr);
  EXPECT_TRUE(captured.reader->report().intact());
  EXPECT_EQ(captured.reader->metadata().capture_options().at("level"), "3");
  EXPECT_EQ(captured.reader->metadata().capture_options().at("sampling_hz"),
            "997");
  const auto info = captured.SlicesNamed("info_mark");
  const auto verbose = captured.SlicesNamed("verbose_mark");
  EXPECT_GT(info.size(), 20u);
  EXPECT_GT(verbose.size(), 20u);
  for (const auto* slices : {&info, &verbose}) {
    for (const auto& slice : *slices) {
      EXPECT_GE(slice.start_ns, capture_start);
      EXPECT_LE(slice.end_ns(), capture_end);
    }
  }
  size_t samples = 0;
  for (const auto& t : captured.tracks) samples += t.events.samples.size();
  EXPECT_GT(samples, 0u);

  auto whole = ReadTraceFile(*stopped);
  ASSERT_NE(whole.reader, nullptr);
  EXPECT_EQ(whole.reader->metadata().capture_options().at("level"), "2");
  EXPECT_GT(whole.SlicesNamed("info_mark").size(), info.size());
  for (const auto& slice : whole.SlicesNamed("verbose_mark")) {
    EXPECT_GE(slice.start_ns, capture_start);
    EXPECT_LE(slice.end_ns(), capture_end);
  }
  size_t local_samples = 0;
  for (const auto& t : whole.tracks) local_samples += t.events.samples.size();
  EXPECT_EQ(local_samples, 0u);
}

// Every RPC of both services on the server's port (its own and XProf's),
// each called once with `authorization` (empty: none): the status code of
// each, by the method's full name.
std::map<std::string, grpc::StatusCode> CallEveryRpc(
    const std::string& address, const std::string& authorization) {
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto native = pb::ProfilerService::NewStub(channel);
  auto xprof = tensorflow::ProfilerService::NewStub(channel);
  const std::string ours = pb::ProfilerService::service_full_name();
  const std::string theirs = tensorflow::ProfilerService::service_full_name();
  std::map<std::string, grpc::StatusCode> codes;
  auto call = [&](const std::string& name, auto&& rpc) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(20));
    if (!authorization.empty()) {
      ctx.AddMetadata("authorization", authorization);
    }
    codes[name] = rpc(&ctx).error_code();
  };
  call(ours + ".GetInfo", [&](grpc::ClientContext* ctx) {
    pb::ProcessInfo info;
    return native->GetInfo(ctx, {}, &info);
  });
  call(ours + ".ProbeClock", [&](grpc::ClientContext* ctx) {
    pb::ClockProbeResponse response;
    return native->ProbeClock(ctx, {}, &response);
  });
  call(ours + ".DumpFlightRecorder", [&](grpc::ClientContext* ctx) {
    pb::DumpRequest request;
    request.set_session("token-check");
    pb::DumpResponse response;
    return native->DumpFlightRecorder(ctx, request, &response);
  });
  call(ours + ".Capture", [&](grpc::ClientContext* ctx) {
    pb::CaptureRequest request;
    request.set_duration_ms(100);
    auto reader = native->Capture(ctx, request);
    pb::CaptureData data;
    while (reader->Read(&data)) {
    }
    return reader->Finish();
  });
  call(ours + ".Stop", [&](grpc::ClientContext* ctx) {
    pb::StopResponse response;
    return native->Stop(ctx, {}, &response);
  });
  call(theirs + ".Profile", [&](grpc::ClientContext* ctx) {
    tensorflow::ProfileRequest request;
    request.set_duration_ms(100);
    request.set_emit_xspace(true);
    tensorflow::ProfileResponse response;
    return xprof->Profile(ctx, request, &response);
  });
  call(theirs + ".Terminate", [&](grpc::ClientContext* ctx) {
    tensorflow::TerminateResponse response;
    return xprof->Terminate(ctx, {}, &response);
  });
  return codes;
}

// The full names of every method of the services the server registers.
std::set<std::string> EveryMethod() {
  std::set<std::string> names;
  for (const std::string& service :
       {std::string(pb::ProfilerService::service_full_name()),
        std::string(tensorflow::ProfilerService::service_full_name())}) {
    const auto* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            service);
    EXPECT_NE(descriptor, nullptr) << service;
    if (descriptor == nullptr) continue;
    for (int i = 0; i < descriptor->method_count(); ++i) {
      names.insert(descriptor->method(i)->full_name());
    }
  }
  return names;
}

TEST(Server, TokenIsCheckedOnEveryCall) {
  ServerOptions so;
  so.token = "open-sesame";
  auto server = Serve(so);
  ASSERT_NE(server, nullptr);
  const std::set<std::string> methods = EveryMethod();
  EXPECT_EQ(methods.size(), 7u);
  for (const std::string& given :
       {std::string(), std::string("Bearer open-sesamE"),
        std::string("Bearer open-sesame-and-more"), std::string("open-sesame"),
        std::string("Bearer ") + *UserToken(/*create=*/true)}) {
    const auto codes = CallEveryRpc(server->address(), given);
    std::set<std::string> called;
    for (const auto& [method, code] : codes) {
      called.insert(method);
      EXPECT_EQ(code, grpc::StatusCode::UNAUTHENTICATED)
          << method << " with authorization '" << given << "'";
    }
    // A method added to either service is called here too.
    EXPECT_EQ(called, methods);
  }
  for (const auto& [method, code] :
       CallEveryRpc(server->address(), "Bearer open-sesame")) {
    EXPECT_NE(code, grpc::StatusCode::UNAUTHENTICATED) << method;
  }
  CaptureOptions o;
  o.workers = {server->address()};
  o.logdir = FreshDir("token");
  o.duration_ms = 100;
  auto denied = CaptureWorkers(o);
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->answered(), 0);
  EXPECT_NE(denied->workers[0].error.find("UNAUTHENTICATED"),
            std::string::npos);
  o.connect.token = "open-sesame";
  auto allowed = CaptureWorkers(o);
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->answered(), 1) << allowed->workers[0].error;
}

// On loopback, with no token configured, other users of the machine are
// kept out: the server requires this user's token, which this user's
// clients read from the token file.
TEST(Server, OnLoopbackTheUserTokenIsRequiredByDefault) {
  unsetenv("PODSCOPE_PROFILER_TOKEN");
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  auto token = UserToken(/*create=*/false);
  ASSERT_TRUE(token.ok()) << token.status();
  for (const std::string& given :
       {std::string(), std::string("Bearer not-the-user-token")}) {
    for (const auto& [method, code] : CallEveryRpc(server->address(), given)) {
      EXPECT_EQ(code, grpc::StatusCode::UNAUTHENTICATED)
          << method << " with authorization '" << given << "'";
    }
  }
  for (const auto& [method, code] :
       CallEveryRpc(server->address(), "Bearer " + *token)) {
    EXPECT_NE(code, grpc::StatusCode::UNAUTHENTICATED) << method;
  }
  CaptureOptions o;
  o.workers = {server->address()};
  o.logdir = FreshDir("user_token");
  o.duration_ms = 100;
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->answered(), 1) << result->workers[0].error;
}

TEST(Server, AnEmptyTokenVariableLeavesLoopbackOpenWithAWarning) {
  setenv("PODSCOPE_PROFILER_TOKEN", "", 1);
  ::testing::internal::CaptureStderr();
  auto server = Serve();
  const std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(server, nullptr);
  EXPECT_NE(warning.find("takes calls from every user of this machine"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find(server->address()), std::string::npos) << warning;
  for (const auto& [method, code] : CallEveryRpc(server->address(), "")) {
    EXPECT_NE(code, grpc::StatusCode::UNAUTHENTICATED) << method;
  }
  // Beyond loopback an empty token is no token.
  ServerOptions everywhere;
  everywhere.bind_address = "0.0.0.0";
  auto refused = StartServer(0, everywhere);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  unsetenv("PODSCOPE_PROFILER_TOKEN");
}

TEST(Server, ATokenFileOthersCanReadStopsTheServer) {
  unsetenv("PODSCOPE_PROFILER_TOKEN");
  ASSERT_TRUE(UserToken(/*create=*/true).ok());
  const std::string path = *UserTokenPath();
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto server = StartServer(0);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(server.status().message().find(path), std::string::npos)
      << server.status();
}

TEST(Server, Tls) {
  const std::string dir = FreshDir("tls");
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
      dir + "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl is needed: " << cmd;
  ServerOptions so;
  so.tls_cert_file = dir + "/cert.pem";
  so.tls_key_file = dir + "/key.pem";
  auto server = Serve(so);
  ASSERT_NE(server, nullptr);
  CaptureOptions o;
  o.workers = {server->address()};
  o.logdir = dir;
  o.duration_ms = 100;
  o.connect.connect_timeout_ms = 1500;
  auto plain = CaptureWorkers(o);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->answered(), 0);
  o.connect.tls_ca_file = dir + "/cert.pem";
  auto secure = CaptureWorkers(o);
  ASSERT_TRUE(secure.ok());
  EXPECT_EQ(secure->answered(), 1) << secure->workers[0].error;

  so.tls_key_file = dir + "/missing.pem";
  auto bad = StartServer(0, so);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("missing.pem"), std::string::npos);
}

TEST(Server, UnreachableWorkerIsNamed) {
  CaptureOptions o;
  o.workers = {"127.0.0.1:1"};
  o.logdir = FreshDir("unreachable");
  o.duration_ms = 100;
  o.connect.connect_timeout_ms = 300;
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->answered(), 0);
  EXPECT_NE(result->workers[0].error.find("127.0.0.1:1"), std::string::npos);
  // Nothing recorded: no manifest, and no session folder left holding one.
  EXPECT_TRUE(result->manifest_path.empty());
  EXPECT_TRUE(result->manifest_error.empty()) << result->manifest_error;
  EXPECT_FALSE(std::filesystem::exists(result->session_dir))
      << result->session_dir;
}

}  // namespace
}  // namespace podscope::profiler
