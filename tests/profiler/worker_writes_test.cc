// Worker-side captures: each worker writes its own file under the capture
// root it was started with, the client gets progress and the file's facts,
// the workers start together, windows of steps hold exactly those steps,
// and refusals name what is wrong. Real servers: in this process for the
// refusals, worker processes for the rest.
#include <grpcpp/grpcpp.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "gtest/gtest.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/profiler_service.grpc.pb.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/profiler/user_token.h"
#include "podscope/trace_format/clock_model.h"
#include "skewed_hosts.h"
#include "synthetic_source.h"
#include "trace_file.h"

#ifndef PODSCOPE_CAPTURE_WORKER
#error "PODSCOPE_CAPTURE_WORKER must name the worker binary"
#endif

namespace podscope::profiler {
namespace {

namespace pb = ::podscope::profiler::proto;
namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::FreshDir;
using testing::ReadTraceFile;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

uint32_t Crc32Of(const std::string& bytes) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(bytes.data()),
            static_cast<uInt>(bytes.size())));
}

// One Capture call as a client would make it; the status it ends with and
// its last message.
grpc::Status CallCapture(const std::string& address,
                         const pb::CaptureRequest& request,
                         pb::CaptureData* last) {
  auto stub = pb::ProfilerService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto token = UserToken(/*create=*/false);
  if (token.ok()) ctx.AddMetadata("authorization", "Bearer " + *token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = stub->Capture(&ctx, request);
  pb::CaptureData data;
  while (reader->Read(&data)) *last = data;
  return reader->Finish();
}

TEST(WorkerWrites, RefusedByAServerWithoutACaptureRoot) {
  unsetenv("PODSCOPE_CAPTURE_ROOT");
  auto server = StartServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  pb::CaptureRequest r;
  r.set_worker_writes(true);
  r.set_session_id("s1");
  r.set_duration_ms(100);
  pb::CaptureData last;
  const grpc::Status s = CallCapture((*server)->address(), r, &last);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("PODSCOPE_CAPTURE_ROOT"), std::string::npos)
      << s.error_message();
  EXPECT_FALSE(IsTracing());
}

TEST(WorkerWrites, RefusesASessionThatIsNotOneFolderName) {
  const std::string parent = FreshDir("ww-names");
  const std::string root = parent + "/root";
  fs::create_directories(root);
  ServerOptions options;
  options.capture_root = root;
  auto server = StartServer(0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  for (const std::string session :
       {"", "..", "../escape", "/tmp/abs", "a/b", ".hidden", "-x"}) {
    pb::CaptureRequest r;
    r.set_worker_writes(true);
    r.set_session_id(session);
    r.set_duration_ms(100);
    pb::CaptureData last;
    const grpc::Status s = CallCapture((*server)->address(), r, &last);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << "session '" << session << "': " << s.error_message();
  }
  // Nothing was made anywhere: not in the root, not beside it.
  EXPECT_TRUE(fs::is_empty(root));
  std::vector<std::string> beside;
  for (const auto& e : fs::directory_iterator(parent)) {
    beside.push_back(e.path().filename().string());
  }
  EXPECT_EQ(beside, std::vector<std::string>{"root"});
}

// A process that records itself (StartTrace) gives a worker-side capture a
// file of the capture's own under the root, and a session of its own with
// a window holds only the window.
TEST(WorkerWrites, AProcessThatRecordsItselfWritesTheCaptureToo) {
  const std::string root = FreshDir("ww-local-root");
  const std::string own = FreshDir("ww-local-own");
  ServerOptions options;
  options.capture_root = root;
  auto server = StartServer(0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(StartTrace(own).ok());
  std::atomic<bool> stop{false};
  std::thread work([&] {
    while (!stop) {
      PODSCOPE_TRACE("local_work");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  pb::CaptureRequest r;
  r.set_worker_writes(true);
  r.set_session_id("shared-trace");
  r.set_duration_ms(300);
  pb::CaptureData last;
  const grpc::Status s = CallCapture((*server)->address(), r, &last);
  stop = true;
  work.join();
  ASSERT_TRUE(StopTrace().ok());
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(last.done());
  ASSERT_TRUE(last.has_file());
  EXPECT_TRUE(last.records().empty());
  const std::string path = root + "/" + last.file().path();
  const std::string bytes = ReadAll(path);
  EXPECT_EQ(bytes.size(), last.file().bytes());
  EXPECT_EQ(Crc32Of(bytes), last.file().crc32());
  auto f = ReadTraceFile(path);
  ASSERT_NE(f.reader, nullptr);
  EXPECT_TRUE(f.reader->report().intact()) << f.reader->report().Describe();
  EXPECT_GT(f.SlicesNamed("local_work").size(), 50u);
}

// Stack samples follow a scheduled capture's window like every other
// event: a thread busy since before the start leaves none from before it.
TEST(WorkerWrites, StackSamplesStayInsideTheWindow) {
  const std::string root = FreshDir("ww-samples-root");
  ServerOptions options;
  options.capture_root = root;
  auto server = StartServer(0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    SetThreadName("busy");
    double x = 1;
    while (!stop) {
      PODSCOPE_TRACE("busy_work");
      for (int i = 0; i < 20000; ++i) x = x * 1.0000001 + 1e-9;
    }
    EXPECT_GT(x, 0);
  });
  pb::CaptureRequest r;
  r.set_worker_writes(true);
  r.set_session_id("samples-window");
  r.set_sampling_hz(997);
  r.set_start_at_ns(MonotonicNs() + 400'000'000);
  r.set_duration_ms(400);
  pb::CaptureData last;
  const grpc::Status s = CallCapture((*server)->address(), r, &last);
  stop = true;
  busy.join();
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(last.has_file());
  const int64_t from = last.file().window_start_ns();
  const int64_t to = last.file().window_end_ns();
  ASSERT_GT(to, from);
  auto f = ReadTraceFile(root + "/" + last.file().path());
  ASSERT_NE(f.reader, nullptr);
  size_t samples = 0;
  for (const auto& t : f.tracks) {
    for (const auto& sample : t.events.samples) {
      ++samples;
      EXPECT_GE(sample.ts_ns, from) << t.track.name();
      EXPECT_LE(sample.ts_ns, to) << t.track.name();
    }
  }
  // 400 ms of a busy thread's CPU at up to 997 Hz (fewer on a loaded
  // machine, and the kernel's tick caps the rate).
  EXPECT_GE(samples, 20u);
}

std::unique_ptr<ChildProcess> StartWorker(const std::vector<std::string>& args,
                                          int* port) {
  auto child =
      testing::StartCaptureWorker(PODSCOPE_CAPTURE_WORKER, {}, args, {}, port);
  if (child == nullptr) ADD_FAILURE() << "a worker did not start";
  return child;
}

// Starts `n` workers with `args` (and --port 0); their addresses.
struct Workers {
  std::vector<std::unique_ptr<ChildProcess>> processes;
  std::vector<std::string> addrs;
  bool Start(int n, const std::vector<std::string>& args) {
    std::vector<std::string> all = {"--port", "0"};
    all.insert(all.end(), args.begin(), args.end());
    for (int i = 0; i < n; ++i) {
      int port = 0;
      processes.push_back(StartWorker(all, &port));
      if (processes.back() == nullptr) return false;
      addrs.push_back("127.0.0.1:" + std::to_string(port));
    }
    return true;
  }
};

TEST(WorkerWrites, WorkersWriteTheirOwnFilesAndStartTogether) {
  const std::string shared = FreshDir("ww-shared");
  Workers pool;
  ASSERT_TRUE(pool.Start(3, {"--capture_root", shared}));
  const std::vector<std::string>& addrs = pool.addrs;
  ASSERT_TRUE(EveryWorkerWritesItsOwnFile(addrs, {}));
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = shared;
  o.session = "pod-1";
  o.duration_ms = 800;
  o.worker_writes = true;
  o.start_lead_ms = 200;
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 3);
  std::vector<int64_t> starts;
  for (const WorkerResult& w : result->workers) {
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_TRUE(w.written_by_worker);
    EXPECT_TRUE(w.file_seen);
    EXPECT_EQ(fs::path(w.path).parent_path(), fs::path(shared) / "pod-1");
    const std::string bytes = ReadAll(w.path);
    EXPECT_EQ(bytes.size(), w.bytes);
    EXPECT_EQ(Crc32Of(bytes), w.crc32) << w.path;
    auto f = ReadTraceFile(w.path);
    ASSERT_NE(f.reader, nullptr);
    EXPECT_TRUE(f.reader->report().intact()) << f.reader->report().Describe();
    EXPECT_GT(f.SlicesNamed("step").size(), 300u);
    // The file lines up by the client's probes, which it carries.
    const trace_format::ClockModel clock(f.reader->clock());
    ASSERT_TRUE(clock.has_reference()) << w.path;
    EXPECT_FALSE(w.job_clock);
    // Nothing before the common start, nor after the end, which is the
    // duration after it exactly, however late the worker stopped: every
    // file covers the same window.
    ASSERT_NE(w.start_at_ns, 0);
    EXPECT_EQ(w.window_start_ns, w.start_at_ns);
    EXPECT_EQ(w.window_end_ns - w.window_start_ns, 800'000'000);
    for (const auto& s : f.SlicesNamed("step")) {
      EXPECT_GE(s.start_ns, w.start_at_ns);
      EXPECT_LE(s.start_ns, w.window_end_ns);
    }
    starts.push_back(clock.ToReference(w.window_start_ns));
  }
  // On the client's clock the three windows begin together, within the
  // probes' uncertainty on a busy two-core machine.
  const auto [lo, hi] = std::minmax_element(starts.begin(), starts.end());
  EXPECT_LT(*hi - *lo, 5'000'000) << "start spread " << (*hi - *lo) << " ns";
  const std::string manifest = ReadAll(result->manifest_path);
  EXPECT_EQ(fs::path(result->manifest_path).parent_path(),
            fs::path(shared) / "pod-1");
  size_t n = 0;
  for (size_t at = 0; (at = manifest.find("\"written_by\": \"worker\"", at)) !=
                      std::string::npos;
       ++at) {
    ++n;
  }
  EXPECT_EQ(n, 3u) << manifest;
  EXPECT_NE(manifest.find("\"mode\": \"worker_writes\""), std::string::npos);
}

// Many workers in one process (a pod simulated on one machine): each
// server's captures record its own source, into files named by its host,
// while the process's own trace stays free.
TEST(WorkerWrites, ServersInOneProcessRecordTheirOwnSources) {
  const std::string shared = FreshDir("ww-sources");
  std::vector<std::unique_ptr<ProfilerServer>> servers;
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) {
    ServerOptions options;
    options.capture_root = shared;
    options.host_name = "sim-" + std::to_string(i);
    options.capture_source =
        std::make_shared<testing::SyntheticSource>(options.host_name, 2000);
    auto server = StartServer(0, options);
    ASSERT_TRUE(server.ok()) << server.status();
    addrs.push_back((*server)->address());
    servers.push_back(std::move(*server));
  }
  // The process records itself meanwhile: the servers do not need its
  // session.
  ASSERT_TRUE(StartTrace(FreshDir("ww-sources-own")).ok());
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = shared;
  o.session = "sim";
  o.duration_ms = 500;
  o.worker_writes = true;
  o.start_lead_ms = 100;
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(StopTrace().ok());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 3);
  std::set<std::string> hosts;
  for (const WorkerResult& w : result->workers) {
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_TRUE(w.file_seen);
    EXPECT_EQ(fs::path(w.path).filename().string().rfind(w.host + ".", 0), 0u)
        << w.path;
    const std::string bytes = ReadAll(w.path);
    EXPECT_EQ(bytes.size(), w.bytes);
    EXPECT_EQ(Crc32Of(bytes), w.crc32);
    auto f = ReadTraceFile(w.path);
    ASSERT_NE(f.reader, nullptr);
    EXPECT_TRUE(f.reader->report().intact()) << f.reader->report().Describe();
    EXPECT_EQ(f.reader->metadata().host(), w.host);
    hosts.insert(w.host);
    // 2,000 scope pairs a second for about half a second, none before the
    // common start.
    const auto steps = f.SlicesNamed("step");
    EXPECT_GT(steps.size(), 500u);
    EXPECT_EQ(f.SlicesNamed("inner").size(), steps.size());
    ASSERT_NE(w.start_at_ns, 0);
    for (const auto& s : steps) EXPECT_GE(s.start_ns, w.start_at_ns);
    EXPECT_GT(w.events, 0u);
  }
  EXPECT_EQ(hosts, (std::set<std::string>{"sim-0", "sim-1", "sim-2"}));
  // A source has no steps: a window of steps is refused, naming why.
  pb::CaptureRequest steps;
  steps.set_worker_writes(true);
  steps.set_session_id("sim-steps");
  steps.set_duration_ms(1000);
  steps.set_by_steps(true);
  steps.set_first_step(1);
  steps.set_last_step(2);
  pb::CaptureData last;
  const grpc::Status refused = CallCapture(addrs[0], steps, &last);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("steps"), std::string::npos)
      << refused.error_message();
}

TEST(WorkerWrites, AWindowOfStepsHoldsExactlyThoseSteps) {
  const std::string shared = FreshDir("ww-steps");
  Workers pool;
  ASSERT_TRUE(pool.Start(2, {"--capture_root", shared, "--step_ms", "40"}));
  const std::vector<std::string>& addrs = pool.addrs;
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = shared;
  o.session = "steps";
  o.duration_ms = 20'000;
  o.worker_writes = true;
  o.by_steps = true;
  // About 1.6 s after the workers started: far enough ahead to be asked
  // for in time.
  o.first_step = 40;
  o.last_step = 42;
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const WorkerResult& w : result->workers) {
    ASSERT_TRUE(w.ok) << w.error;
    auto f = ReadTraceFile(w.path);
    ASSERT_NE(f.reader, nullptr);
    std::set<int64_t> steps;
    int64_t first_start = INT64_MAX, last_end = 0;
    for (const auto& t : f.tracks) {
      for (uint32_t i = 0; i < t.events.slices.size(); ++i) {
        const auto& s = t.events.slices[i];
        if (f.Name(s.name) != "train_step") continue;
        steps.insert(f.IntArg(t, i, "step"));
        first_start = std::min(first_start, s.start_ns);
        last_end = std::max(last_end, s.start_ns + s.duration_ns);
      }
    }
    EXPECT_EQ(steps, (std::set<int64_t>{40, 41, 42})) << w.path;
    // The steps' own work, and nothing from before or after them.
    const auto inner = f.SlicesNamed("inner");
    EXPECT_GE(inner.size(), 60u);
    for (const auto& s : inner) {
      EXPECT_GE(s.start_ns, first_start);
      EXPECT_LE(s.start_ns, last_end);
    }
  }
}

// Threads of this process now.
int ThreadCount() {
  int n = 0;
  std::error_code e;
  for (const auto& t : fs::directory_iterator("/proc/self/task", e)) {
    (void)t;
    ++n;
  }
  return n;
}

// A streamed capture (every worker's trace through this side, its file
// written here) of 48 workers takes a fixed number of threads, not one or
// more per worker: every file complete, its clock probed through the
// capture, and one unreachable worker named.
TEST(StreamedFanout, FortyEightWorkersWithAFixedNumberOfThreads) {
  const std::string logdir = FreshDir("streamed-48");
  std::vector<std::unique_ptr<ChildProcess>> processes;
  std::vector<std::string> addrs;
  for (int p = 0; p < 2; ++p) {
    processes.push_back(testing::StartServerProcess(
        PODSCOPE_CAPTURE_WORKER, 24, {"--rate_hz", "1000"}, &addrs));
    ASSERT_NE(processes.back(), nullptr);
  }
  addrs.push_back("127.0.0.1:1");
  // A capture of one worker first: gRPC's own threads are then running.
  {
    CaptureOptions one;
    one.workers = {addrs[0]};
    one.logdir = logdir;
    one.session = "warm";
    one.duration_ms = 100;
    auto warm = CaptureWorkers(one);
    ASSERT_TRUE(warm.ok()) << warm.status();
  }
  const int before = ThreadCount();
  std::atomic<int> most{0};
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = logdir;
  o.session = "streamed";
  o.duration_ms = 1000;
  o.connect.connect_timeout_ms = 1000;
  o.progress = [&](const CaptureProgress&) {
    most = std::max(most.load(), ThreadCount());
  };
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->answered(), 48);
  // In all: this one, the capture's (the queue's, the opener, the pool of
  // 8, the prober, the reporter) and gRPC's own (about 10 under load): far
  // fewer than the 48 workers, and the same for any number of them.
  EXPECT_LE(most.load(), 32) << "threads before: " << before;
  for (size_t i = 0; i < 48; ++i) {
    const WorkerResult& w = result->workers[i];
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_FALSE(w.written_by_worker);
    EXPECT_EQ(fs::path(w.path).parent_path().string(), logdir + "/streamed");
    // Probed before, through (every 100 ms) and after the capture.
    EXPECT_GE(w.clock_probes, 4) << w.address;
    auto f = ReadTraceFile(w.path);
    ASSERT_NE(f.reader, nullptr);
    EXPECT_TRUE(f.reader->report().intact()) << f.reader->report().Describe();
    EXPECT_GT(f.SlicesNamed("step").size(), 200u) << w.path;
  }
  EXPECT_FALSE(result->workers[48].ok);
  EXPECT_NE(result->workers[48].error.find("127.0.0.1:1"), std::string::npos)
      << result->workers[48].error;
  for (auto& p : processes) p->WriteLine("quit");
}

// A source that records nothing and runs no thread: what is left of a
// capture's threads is the server's own.
class QuietSource : public CaptureSource {
 public:
  absl::Status Start(std::unique_ptr<trace_format::RecordSink> sink,
                     const std::string& session_id, int64_t) override {
    auto writer = trace_format::TraceWriter::Create(std::move(sink));
    if (!writer.ok()) return writer.status();
    writer_ = std::move(*writer);
    trace_format::proto::Metadata metadata;
    metadata.set_session_id(session_id);
    writer_->SetMetadata(metadata);
    return absl::OkStatus();
  }
  absl::Status Stop() override {
    absl::Status s = writer_ != nullptr ? writer_->Close() : absl::OkStatus();
    writer_.reset();
    return s;
  }
  uint64_t events() const override { return 0; }

 private:
  std::unique_ptr<trace_format::TraceWriter> writer_;
};

// Servers hold no thread per capture: 24 servers of this process, all
// captured at once, add far fewer than 24 threads (a thread per call and
// one per capture would add 48).
TEST(WorkerWrites, ServersHoldNoThreadPerCapture) {
  constexpr int kServers = 24;
  const std::string shared = FreshDir("ww-quiet");
  std::vector<std::unique_ptr<ProfilerServer>> servers;
  std::vector<std::string> addrs;
  for (int i = 0; i < kServers; ++i) {
    ServerOptions options;
    options.capture_root = shared;
    options.host_name = "quiet-" + std::to_string(i);
    options.capture_source = std::make_shared<QuietSource>();
    auto server = StartServer(0, options);
    ASSERT_TRUE(server.ok()) << server.status();
    addrs.push_back((*server)->address());
    servers.push_back(std::move(*server));
  }
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = shared;
  o.duration_ms = 300;
  o.worker_writes = true;
  o.start_lead_ms = 100;
  // One capture first: gRPC's and the client's own threads are then
  // running, as they are for any later capture.
  o.session = "warm";
  ASSERT_TRUE(CaptureWorkers(o).ok());
  const int before = ThreadCount();
  std::atomic<int> most{0};
  o.session = "quiet";
  o.duration_ms = 1000;
  o.progress = [&](const CaptureProgress&) {
    most = std::max(most.load(), ThreadCount());
  };
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->answered(), kServers);
  for (const WorkerResult& w : result->workers) {
    ASSERT_TRUE(w.ok) << w.error;
    auto f = ReadTraceFile(w.path);
    ASSERT_NE(f.reader, nullptr) << w.path;
    EXPECT_TRUE(f.reader->report().intact()) << f.reader->report().Describe();
  }
  EXPECT_LT(most.load() - before, kServers / 2)
      << "threads before: " << before << ", during: " << most.load();
}

// 64 workers, 5 of them unreachable and 3 dying mid-capture: the other 56
// complete, and every worker's outcome is in the result and the manifest.
// The 56 are servers in two processes (capture_worker --servers), each
// recording a load of its own; the 3 that die are processes of their own.
TEST(WorkerWrites, SixtyFourWorkersWithFiveUnreachableAndThreeDying) {
  const std::string shared = FreshDir("ww-64");
  std::vector<std::unique_ptr<ChildProcess>> processes;
  std::vector<std::string> addrs;
  for (int p = 0; p < 2; ++p) {
    processes.push_back(testing::StartServerProcess(
        PODSCOPE_CAPTURE_WORKER, 28,
        {"--rate_hz", "2000", "--capture_root", shared}, &addrs));
    ASSERT_NE(processes.back(), nullptr);
  }
  Workers dying;
  ASSERT_TRUE(dying.Start(3, {"--capture_root", shared}));
  std::vector<size_t> dying_at;
  for (const std::string& a : dying.addrs) {
    dying_at.push_back(addrs.size());
    addrs.push_back(a);
  }
  std::vector<size_t> unreachable_at;
  for (int port = 1; port <= 5; ++port) {
    unreachable_at.push_back(addrs.size());
    addrs.push_back("127.0.0.1:" + std::to_string(port));
  }
  ASSERT_EQ(addrs.size(), 64u);

  CaptureOptions o;
  o.workers = addrs;
  o.logdir = shared;
  o.session = "pod-64";
  o.duration_ms = 1500;
  o.worker_writes = true;
  o.connect.connect_timeout_ms = 1000;
  // Each dying worker is killed once its file holds flushed events.
  std::thread killer([&] {
    const fs::path dir = fs::path(shared) / "pod-64";
    std::vector<bool> killed(dying.processes.size(), false);
    size_t left = killed.size();
    for (int round = 0; round < 3000 && left > 0; ++round) {
      std::error_code e;
      for (const auto& f : fs::directory_iterator(dir, e)) {
        const std::string name = f.path().filename().string();
        for (size_t k = 0; k < killed.size(); ++k) {
          const std::string suffix =
              "." + std::to_string(dying.processes[k]->pid()) + ".podtrace";
          if (!killed[k] && name.size() > suffix.size() &&
              name.compare(name.size() - suffix.size(), suffix.size(),
                           suffix) == 0 &&
              fs::file_size(f.path(), e) > 2048) {
            dying.processes[k]->Kill();
            killed[k] = true;
            --left;
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(left, 0u) << "a dying worker's file never grew";
  });
  auto result = CaptureWorkers(o);
  killer.join();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->workers.size(), 64u);
  EXPECT_EQ(result->answered(), 56);
  for (size_t i = 0; i < 56; ++i) {
    const WorkerResult& w = result->workers[i];
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_TRUE(w.file_seen) << w.path;
    auto f = ReadTraceFile(w.path);
    ASSERT_NE(f.reader, nullptr) << w.path;
    EXPECT_TRUE(f.reader->report().intact()) << w.path;
    EXPECT_GT(f.SlicesNamed("step").size(), 1000u) << w.path;
  }
  for (size_t i : dying_at) {
    const WorkerResult& w = result->workers[i];
    EXPECT_FALSE(w.ok);
    EXPECT_NE(w.error.find(addrs[i]), std::string::npos) << w.error;
    // Reached, then lost: what it flushed before it died is readable.
    EXPECT_FALSE(w.protocol.empty());
  }
  for (size_t i : unreachable_at) {
    const WorkerResult& w = result->workers[i];
    EXPECT_FALSE(w.ok);
    EXPECT_NE(w.error.find(addrs[i]), std::string::npos) << w.error;
    EXPECT_TRUE(w.protocol.empty()) << "never reached: " << w.error;
  }
  // The dying workers' files: each holds steps it flushed before it died.
  int partial = 0;
  for (const auto& e : fs::directory_iterator(fs::path(shared) / "pod-64")) {
    for (const auto& p : dying.processes) {
      const std::string suffix = "." + std::to_string(p->pid()) + ".podtrace";
      const std::string name = e.path().filename().string();
      if (name.size() <= suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) !=
              0) {
        continue;
      }
      auto f = ReadTraceFile(e.path().string());
      ASSERT_NE(f.reader, nullptr) << name;
      EXPECT_GT(f.SlicesNamed("step").size(), 20u) << name;
      ++partial;
    }
  }
  EXPECT_EQ(partial, 3);
  // The manifest says what each of the 64 did.
  const std::string manifest = ReadAll(result->manifest_path);
  EXPECT_NE(manifest.find("\"answered\": 56"), std::string::npos);
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = 0; (at = manifest.find(needle, at)) != std::string::npos;
         ++at) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("\"outcome\": \"ok\""), 56u) << manifest;
  EXPECT_EQ(count("\"outcome\": \"not reached\""), 5u) << manifest;
  EXPECT_EQ(count("\"outcome\": \"failed\""), 3u) << manifest;
  for (auto& p : processes) p->WriteLine("quit");
}

TEST(WorkerWrites, FailuresAreCollectedAndTheOthersComplete) {
  const std::string shared = FreshDir("ww-failures");
  Workers pool;
  ASSERT_TRUE(pool.Start(3, {"--capture_root", shared}));
  auto& workers = pool.processes;
  std::vector<std::string> addrs = pool.addrs;
  // Nothing listens on port 1, and one worker has no root.
  addrs.push_back("127.0.0.1:1");
  int rootless_port = 0;
  workers.push_back(StartWorker({"--port", "0"}, &rootless_port));
  ASSERT_NE(workers.back(), nullptr);
  addrs.push_back("127.0.0.1:" + std::to_string(rootless_port));
  ConnectOptions quick;
  quick.connect_timeout_ms = 1000;
  EXPECT_FALSE(EveryWorkerWritesItsOwnFile(addrs, quick));
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = shared;
  o.session = "casualties";
  o.duration_ms = 1500;
  o.worker_writes = true;
  o.connect.connect_timeout_ms = 1000;
  // Killed once its file holds flushed events: after the common start,
  // which waits for every worker to be reached or to fail.
  const std::string suffix =
      "." + std::to_string(workers[1]->pid()) + ".podtrace";
  std::thread killer([&] {
    const fs::path dir = fs::path(shared) / "casualties";
    for (int i = 0; i < 3000; ++i) {
      std::error_code e;
      for (const auto& f : fs::directory_iterator(dir, e)) {
        const std::string name = f.path().filename().string();
        if (name.size() > suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) ==
                0 &&
            fs::file_size(f.path(), e) > 2048) {
          workers[1]->Kill();
          return;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << "the worker's file never grew";
  });
  auto result = CaptureWorkers(o);
  killer.join();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->workers.size(), 5u);
  EXPECT_EQ(result->answered(), 2);
  for (int i : {0, 2}) EXPECT_TRUE(result->workers[i].ok);
  for (int i : {1, 3, 4}) {
    const WorkerResult& w = result->workers[i];
    EXPECT_FALSE(w.ok);
    EXPECT_NE(w.error.find(addrs[i]), std::string::npos) << w.error;
  }
  EXPECT_NE(result->workers[4].error.find("capture root"), std::string::npos)
      << result->workers[4].error;
  // The dead worker's file holds what it flushed before it died.
  bool found = false;
  for (const auto& e :
       fs::directory_iterator(fs::path(shared) / "casualties")) {
    const std::string name = e.path().filename().string();
    if (name == "manifest.json") continue;
    if (result->workers[0].path == e.path().string() ||
        result->workers[2].path == e.path().string()) {
      continue;
    }
    auto f = ReadTraceFile(e.path().string());
    ASSERT_NE(f.reader, nullptr) << name;
    EXPECT_GT(f.SlicesNamed("step").size(), 20u) << name;
    found = true;
  }
  EXPECT_TRUE(found) << "no file of the worker that died";
  const std::string manifest = ReadAll(result->manifest_path);
  EXPECT_NE(manifest.find("\"answered\": 2"), std::string::npos) << manifest;
}

}  // namespace
}  // namespace podscope::profiler
