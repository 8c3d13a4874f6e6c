// The profiler server answering XProf's tensorflow.ProfilerService as
// TensorBoard's capture button would call it: a real server on loopback, a
// client generated from the proto, a process recording host scopes at two
// levels and device stream events while it is captured.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "gtest/gtest.h"
#include "podscope/profiler/profiler_service.grpc.pb.h"
#include "podscope/profiler/recorder.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/trace.h"
#include "podscope/profiler/xprof_service.grpc.pb.h"

namespace podscope::profiler {
namespace {

namespace fs = std::filesystem;
namespace tf = ::tensorflow;
namespace xp = ::tensorflow::profiler;

// Host scopes at info and verbose level and device stream kernels, until
// destroyed.
class Work {
 public:
  Work()
      : thread_([this] {
          SetThreadName("trainer");
          const TrackHandle stream =
              RegisterDeviceStreamTrack(0, 0, "stream 0");
          while (!stop_.load()) {
            {
              PODSCOPE_TRACE("work");
              PODSCOPE_TRACE_LEVEL(Level::kVerbose, "detail");
              if (IsRecording()) {
                const int64_t t = NowNs();
                RecordSlice(stream, t, t + 1'000, "kernel");
              }
            }
            std::this_thread::sleep_for(std::chrono::microseconds(300));
          }
        }) {}
  ~Work() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// TensorBoard's and XProf's capture buttons send no token: a process they
// capture on loopback runs its server open, as docs/interop.md tells users
// to do (set before any thread starts).
[[maybe_unused]] const bool kOpenOnLoopback = [] {
  setenv("PODSCOPE_PROFILER_TOKEN", "", 1);
  return true;
}();

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("xprof_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::unique_ptr<ProfilerServer> Serve(const ServerOptions& options = {}) {
  unsetenv("PODSCOPE_XPROF_REPOSITORY_ROOT");
  auto server = StartServer(0, options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<tf::ProfilerService::Stub> Stub(const ProfilerServer& s) {
  return tf::ProfilerService::NewStub(
      grpc::CreateChannel(s.address(), grpc::InsecureChannelCredentials()));
}

// A Profile that arrives while a capture runs joins it (with its level), so
// each capture below waits for the previous one to be over.
void WaitUntilIdle(const ProfilerServer& s) {
  auto stub = proto::ProfilerService::NewStub(
      grpc::CreateChannel(s.address(), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext ctx;
    proto::ProcessInfo info;
    if (stub->GetInfo(&ctx, {}, &info).ok() && !info.capturing()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ADD_FAILURE() << "the server kept capturing";
}

tf::ProfileRequest Request(uint64_t duration_ms, uint32_t host_level,
                           uint32_t device_level) {
  tf::ProfileRequest r;
  r.set_duration_ms(duration_ms);
  r.set_emit_xspace(true);
  r.set_session_id("2026_11_23_17_00_00");
  r.mutable_opts()->set_version(1);
  r.mutable_opts()->set_host_tracer_level(host_level);
  r.mutable_opts()->set_device_tracer_level(device_level);
  return r;
}

// Event names per plane name.
std::map<std::string, std::set<std::string>> Names(const xp::XSpace& space) {
  std::map<std::string, std::set<std::string>> out;
  for (const xp::XPlane& p : space.planes()) {
    auto& names = out[p.name()];
    for (const xp::XLine& l : p.lines()) {
      for (const xp::XEvent& e : l.events()) {
        names.insert(p.event_metadata().at(e.metadata_id()).name());
      }
    }
  }
  return out;
}

TEST(XprofService, EmitXSpaceHonoursHostAndDeviceTracerLevels) {
  Work work;
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  auto stub = Stub(*server);

  {  // Level 2 leaves verbose scopes out; device level 0 the devices.
    grpc::ClientContext ctx;
    tf::ProfileResponse response;
    ASSERT_TRUE(stub->Profile(&ctx, Request(300, 2, 0), &response).ok());
    auto names = Names(response.xspace());
    EXPECT_TRUE(names["/host:CPU"].count("work"));
    EXPECT_FALSE(names["/host:CPU"].count("detail"));
    EXPECT_FALSE(names.count("/device:CUSTOM:0"));
  }
  WaitUntilIdle(*server);
  {
    grpc::ClientContext ctx;
    tf::ProfileResponse response;
    const grpc::Status s = stub->Profile(&ctx, Request(300, 3, 1), &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(response.empty_trace());
    auto names = Names(response.xspace());
    ASSERT_TRUE(names.count("/host:CPU"));
    EXPECT_TRUE(names["/host:CPU"].count("work"));
    EXPECT_TRUE(names["/host:CPU"].count("detail"));
    ASSERT_TRUE(names.count("/device:CUSTOM:0")) << names.size();
    EXPECT_TRUE(names["/device:CUSTOM:0"].count("kernel"));
  }
  WaitUntilIdle(*server);
  {  // max_events bounds the answer, and its warnings say so.
    tf::ProfileRequest r = Request(300, 2, 1);
    r.set_max_events(5);
    grpc::ClientContext ctx;
    tf::ProfileResponse response;
    ASSERT_TRUE(stub->Profile(&ctx, r, &response).ok());
    int events = 0;
    for (const auto& p : response.xspace().planes()) {
      for (const auto& l : p.lines()) {
        if (l.name() != "Steps") events += l.events_size();
      }
    }
    EXPECT_EQ(events, 5);
    ASSERT_EQ(response.xspace().warnings_size(), 1);
    EXPECT_NE(response.xspace().warnings(0).find("max_events 5"),
              std::string::npos);
  }
  WaitUntilIdle(*server);
  {  // Host level 0: only the devices.
    grpc::ClientContext ctx;
    tf::ProfileResponse response;
    ASSERT_TRUE(stub->Profile(&ctx, Request(300, 0, 1), &response).ok());
    auto names = Names(response.xspace());
    EXPECT_FALSE(names.count("/host:CPU"));
    EXPECT_TRUE(names["/device:CUSTOM:0"].count("kernel"));
  }
}

TEST(XprofService, TerminateEndsARunningProfile) {
  Work work;
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  auto stub = Stub(*server);
  grpc::Status status;
  tf::ProfileResponse response;
  std::atomic<bool> answered{false};
  const auto start = std::chrono::steady_clock::now();
  std::thread profile([&] {
    grpc::ClientContext ctx;
    status = stub->Profile(&ctx, Request(60'000, 2, 1), &response);
    answered = true;
  });
  // Until the Profile has started (on a busy machine it may take a while),
  // a Terminate finds nothing to end; it is repeated until one does.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  while (!answered.load() &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    grpc::ClientContext ctx;
    tf::TerminateRequest terminate;
    terminate.set_session_id("2026_11_23_17_00_00");
    tf::TerminateResponse ignored;
    ASSERT_TRUE(stub->Terminate(&ctx, terminate, &ignored).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  profile.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(response.empty_trace());
  EXPECT_TRUE(Names(response.xspace())["/host:CPU"].count("work"));
}

TEST(XprofService, TokenIsRequiredWhenConfigured) {
  ServerOptions options;
  options.token = "s3cret";
  auto server = Serve(options);
  ASSERT_NE(server, nullptr);
  auto stub = Stub(*server);
  for (const char* given : {"", "Bearer wrong!", "Bearer s3cret"}) {
    grpc::ClientContext ctx;
    if (*given) ctx.AddMetadata("authorization", given);
    tf::ProfileResponse response;
    const grpc::Status s = stub->Profile(&ctx, Request(50, 2, 1), &response);
    if (std::string(given) == "Bearer s3cret") {
      EXPECT_TRUE(s.ok()) << s.error_message();
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << given;
    }
  }
  grpc::ClientContext ctx;
  tf::TerminateResponse ignored;
  EXPECT_EQ(stub->Terminate(&ctx, {}, &ignored).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

grpc::StatusCode WriteTo(tf::ProfilerService::Stub& stub,
                         const std::string& repository) {
  tf::ProfileRequest r = Request(50, 2, 1);
  r.set_emit_xspace(false);
  r.set_repository_root(repository);
  r.set_host_name("worker-7");
  grpc::ClientContext ctx;
  tf::ProfileResponse response;
  return stub.Profile(&ctx, r, &response).error_code();
}

TEST(XprofService, RepositoryWritesStayInsideTheConfiguredRoot) {
  Work work;
  const fs::path dir = FreshDir("repo");
  {  // No root configured: nothing is written anywhere.
    auto server = Serve();
    ASSERT_NE(server, nullptr);
    auto stub = Stub(*server);
    EXPECT_EQ(WriteTo(*stub, (dir / "anything").string()),
              grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_FALSE(fs::exists(dir / "anything"));
    // Neither emit_xspace nor a repository: the XSpace comes as tool data.
    tf::ProfileRequest r = Request(50, 2, 1);
    r.set_emit_xspace(false);
    r.set_host_name("worker-7");
    grpc::ClientContext ctx;
    tf::ProfileResponse response;
    ASSERT_TRUE(stub->Profile(&ctx, r, &response).ok());
    ASSERT_EQ(response.tool_data_size(), 1);
    EXPECT_EQ(response.tool_data(0).name(), "worker-7.xplane.pb");
    xp::XSpace space;
    EXPECT_TRUE(space.ParseFromString(response.tool_data(0).data()));
    EXPECT_GT(space.planes_size(), 0);
  }
  const fs::path root = dir / "root";
  const fs::path outside = dir / "outside";
  fs::create_directories(root);
  fs::create_directories(outside);
  fs::create_directory_symlink(outside, root / "link");
  ServerOptions options;
  options.xprof_repository_root = root.string();
  auto server = Serve(options);
  ASSERT_NE(server, nullptr);
  auto stub = Stub(*server);

  EXPECT_EQ(WriteTo(*stub, "runs/plugins/profile"), grpc::StatusCode::OK);
  const fs::path written =
      root / "runs/plugins/profile/2026_11_23_17_00_00/worker-7.xplane.pb";
  ASSERT_TRUE(fs::exists(written));
  xp::XSpace space;
  std::ifstream in(written, std::ios::binary);
  ASSERT_TRUE(space.ParseFromIstream(&in));
  EXPECT_TRUE(Names(space)["/host:CPU"].count("work"));
  EXPECT_EQ(WriteTo(*stub, (root / "abs").string()), grpc::StatusCode::OK);
  EXPECT_TRUE(fs::exists(root / "abs/2026_11_23_17_00_00/worker-7.xplane.pb"));

  for (const std::string& escape :
       {std::string("../outside"), std::string("runs/../../outside"),
        outside.string(), std::string("/tmp"), std::string("link"),
        std::string("link/deeper")}) {
    EXPECT_EQ(WriteTo(*stub, escape), grpc::StatusCode::PERMISSION_DENIED)
        << escape;
  }
  EXPECT_TRUE(fs::is_empty(outside));
  fs::remove_all(dir);
}

grpc::StatusCode WriteAs(tf::ProfilerService::Stub& stub,
                         const std::string& session, const std::string& host) {
  tf::ProfileRequest r = Request(50, 2, 1);
  r.set_emit_xspace(false);
  r.set_repository_root("runs");
  r.set_session_id(session);
  r.set_host_name(host);
  grpc::ClientContext ctx;
  tf::ProfileResponse response;
  return stub.Profile(&ctx, r, &response).error_code();
}

TEST(XprofService, SessionAndHostNamesCannotLeaveTheRepository) {
  Work work;
  const fs::path dir = FreshDir("names");
  const fs::path root = dir / "root";
  const fs::path outside = dir / "outside";
  fs::create_directories(root);
  fs::create_directories(outside);
  ServerOptions options;
  options.xprof_repository_root = root.string();
  auto server = Serve(options);
  ASSERT_NE(server, nullptr);
  auto stub = Stub(*server);

  // Each name is one path component (base::SafeFileComponent):
  // separators become '_' and a leading '.' gets a '_' before it, so '..'
  // and absolute paths stay names inside <root>/runs.
  const std::string absolute = (outside / "abs").string();
  const std::pair<std::string, std::string> requests[] = {
      {"../x", "worker"},   {"a/../../b", "worker"},
      {absolute, "worker"}, {"s", "../../../outside/evil"},
      {"s", "a/../../b"},   {"s", absolute},
      {"..", ".."},
  };
  for (const auto& [session, host] : requests) {
    WaitUntilIdle(*server);
    EXPECT_EQ(WriteAs(*stub, session, host), grpc::StatusCode::OK)
        << session << " " << host;
  }
  auto component = [](std::string name) {
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    return name.front() == '_' ? name : "_" + name;
  };
  const fs::path runs = root / "runs";
  std::set<std::string> want = {
      "_.._x/worker.xplane.pb",
      "a_.._.._b/worker.xplane.pb",
      component(absolute) + "/worker.xplane.pb",
      "s/_.._.._.._outside_evil.xplane.pb",
      "s/a_.._.._b.xplane.pb",
      "s/" + component(absolute) + ".xplane.pb",
      "_../_...xplane.pb",
  };
  std::set<std::string> got;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), runs);
    // Every file is <root>/runs/<session>/<host>.xplane.pb.
    ASSERT_FALSE(rel.empty() || *rel.begin() == "..") << entry.path();
    ASSERT_EQ(std::distance(rel.begin(), rel.end()), 2) << entry.path();
    got.insert(rel.string());
  }
  EXPECT_EQ(got, want);
  EXPECT_TRUE(fs::is_empty(outside));
  EXPECT_FALSE(fs::exists(dir / "x"));
  EXPECT_FALSE(fs::exists(dir / "b"));
  EXPECT_FALSE(fs::exists(root / "b"));
  fs::remove_all(dir);
}

TEST(XprofService, ProfileAnswersOverTls) {
  Work work;
  const fs::path dir = FreshDir("tls");
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
      (dir / "key.pem").string() + " -out " + (dir / "cert.pem").string() +
      " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl is needed: " << cmd;
  ServerOptions options;
  options.tls_cert_file = (dir / "cert.pem").string();
  options.tls_key_file = (dir / "key.pem").string();
  options.token = "s3cret";
  auto server = Serve(options);
  ASSERT_NE(server, nullptr);

  {  // A plain-text client does not get through.
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(3));
    ctx.AddMetadata("authorization", "Bearer s3cret");
    tf::ProfileResponse response;
    const grpc::Status s =
        Stub(*server)->Profile(&ctx, Request(50, 2, 1), &response);
    EXPECT_FALSE(s.ok());
  }
  std::ifstream in(dir / "cert.pem");
  const std::string pem((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem;
  auto stub = tf::ProfilerService::NewStub(
      grpc::CreateChannel(server->address(), grpc::SslCredentials(ssl)));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer s3cret");
  tf::ProfileResponse response;
  const grpc::Status s = stub->Profile(&ctx, Request(300, 2, 1), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(response.empty_trace());
  EXPECT_TRUE(Names(response.xspace())["/host:CPU"].count("work"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace podscope::profiler
