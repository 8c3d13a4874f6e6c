// A stand-in for the profiler server JAX, TensorFlow and PyTorch/XLA run
// (`tensorflow.ProfilerService`), for tests and benchmarks of the capture
// client: a real gRPC server on loopback that answers Profile, as those
// do, by waiting for ProfileOptions.start_timestamp_ns on its own wall
// clock, recording for the duration, and answering with an XSpace built to
// the public schema. Its wall clock is the machine's plus a known offset;
// its collectives end at instants common to every such server of a test
// (the request's start plus fixed steps, on the machine's clock), each
// moved by a known jitter, so that alignment can be checked against the
// truth. Modes answer as broken or busy servers do.
#ifndef PODSCOPE_TESTS_PROFILER_XPROF_TEST_SERVER_H_
#define PODSCOPE_TESTS_PROFILER_XPROF_TEST_SERVER_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "podscope/profiler/xprof_service.grpc.pb.h"

namespace podscope::profiler::testing {

struct XProfHostOptions {
  std::string host_name = "xprof-host";
  // This host's wall clock minus the machine's.
  int64_t clock_offset_ns = 0;
  // Collective ops per answer (all-reduce, all-gather in turn), one step
  // each, spread evenly over the recording.
  int collectives = 12;
  // Each collective's end moved by up to this (deterministic per host,
  // op and `jitter_seed`).
  int64_t collective_jitter_ns = 0;
  uint64_t jitter_seed = 1;
  // Events per host thread line (two lines).
  int thread_events = 50;
  // How the server answers.
  // kToolData: the XSpace as tool_data `<host>.xplane.pb`, as servers
  // that predate emit_xspace answer; kBadToolData: garbage there.
  enum class Mode {
    kNormal,
    kBusy,
    kEmpty,
    kHugeXSpace,
    kToolData,
    kBadToolData
  } mode = Mode::kNormal;
  // kHugeXSpace: the size of the stat that makes the answer huge.
  size_t huge_bytes = 3 << 20;
};

inline int64_t MachineRealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The jitter of collective `k` on a host, in [-jitter, +jitter].
inline int64_t JitterOf(uint64_t seed, int k, int64_t jitter) {
  if (jitter == 0) return 0;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(k) + 1;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<int64_t>(x % static_cast<uint64_t>(2 * jitter + 1)) -
         jitter;
}

class XProfTestServer final : public tensorflow::ProfilerService::Service {
 public:
  explicit XProfTestServer(XProfHostOptions options)
      : options_(std::move(options)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.SetMaxSendMessageSize(64 << 20);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~XProfTestServer() override {
    if (server_) server_->Shutdown();
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool ok() const { return server_ != nullptr && port_ > 0; }

  // The requests received, and when (machine realtime).
  std::vector<tensorflow::ProfileRequest> requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  std::vector<int64_t> received_at() {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_at_;
  }
  // Events in the last XSpace sent.
  uint64_t events_sent() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_sent_;
  }
  // The true end (machine realtime) of collective k of the last answer.
  std::vector<int64_t> collective_true_ends() {
    std::lock_guard<std::mutex> lock(mutex_);
    return true_ends_;
  }

  // Whether any call carried an authorization header.
  bool saw_token() {
    std::lock_guard<std::mutex> lock(mutex_);
    return saw_token_;
  }

  int terminates() {
    std::lock_guard<std::mutex> lock(wait_mutex_);
    return terminates_;
  }

  // Ends the Profile call of the same session, as the real servers do; a
  // Terminate of another session changes nothing.
  grpc::Status Terminate(grpc::ServerContext* ctx,
                         const tensorflow::TerminateRequest* request,
                         tensorflow::TerminateResponse*) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      saw_token_ |= ctx->client_metadata().count("authorization") > 0;
    }
    {
      std::lock_guard<std::mutex> lock(wait_mutex_);
      ++terminates_;
      if (request->session_id() != profiling_session_) return grpc::Status::OK;
      terminated_ = true;
    }
    wait_cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Profile(grpc::ServerContext* ctx,
                       const tensorflow::ProfileRequest* request,
                       tensorflow::ProfileResponse* response) override {
    {
      std::lock_guard<std::mutex> wait_lock(wait_mutex_);
      terminated_ = false;
      profiling_session_ = request->session_id();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      saw_token_ |= ctx->client_metadata().count("authorization") > 0;
      requests_.push_back(*request);
      received_at_.push_back(MachineRealtimeNs());
    }
    using Mode = XProfHostOptions::Mode;
    if (options_.mode == Mode::kBusy) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "Another profiling session active.");
    }
    const uint64_t duration_ms = request->opts().duration_ms() != 0
                                     ? request->opts().duration_ms()
                                     : request->duration_ms();
    // The start, as the real servers read it: on the host's own clock.
    const int64_t start =
        static_cast<int64_t>(request->opts().start_timestamp_ns());
    const int64_t wait_ns = start - LocalNs();
    if (wait_ns > 0) WaitFor(wait_ns);
    const int64_t begin = MachineRealtimeNs();
    WaitFor(static_cast<int64_t>(duration_ms) * 1'000'000);
    const int64_t end = MachineRealtimeNs();
    if (options_.mode == Mode::kEmpty) {
      response->set_empty_trace(true);
      return grpc::Status::OK;
    }
    BuildXSpace(start > 0 ? start : begin,
                static_cast<int64_t>(duration_ms) * 1'000'000, begin, end,
                response->mutable_xspace());
    if (options_.mode == Mode::kToolData ||
        options_.mode == Mode::kBadToolData) {
      tensorflow::ProfileToolData* tool = response->add_tool_data();
      tool->set_name(options_.host_name + ".xplane.pb");
      tool->set_data(options_.mode == Mode::kToolData
                         ? response->xspace().SerializeAsString()
                         : std::string("\x0a\xff\xff\xff\x0f", 5));
      response->clear_xspace();
    }
    if (options_.mode == Mode::kHugeXSpace) {
      auto* plane = response->mutable_xspace()->mutable_planes(0);
      auto* stat = plane->add_stats();
      stat->set_metadata_id(1);
      stat->set_bytes_value(std::string(options_.huge_bytes, 'x'));
    }
    return grpc::Status::OK;
  }

 private:
  int64_t LocalNs() const {
    return MachineRealtimeNs() + options_.clock_offset_ns;
  }

  // The server emulates recording for a time, or until Terminate.
  void WaitFor(int64_t ns) {
    std::unique_lock<std::mutex> lock(wait_mutex_);
    wait_cv_.wait_for(lock, std::chrono::nanoseconds(ns),
                      [&] { return terminated_; });
  }

  // `anchor`: the common start on the machine's clock (the request's);
  // [begin, end]: when this server recorded (machine clock). Times in the
  // XSpace are the host's.
  void BuildXSpace(int64_t anchor, int64_t duration_ns, int64_t begin,
                   int64_t end, tensorflow::profiler::XSpace* space) {
    namespace xp = tensorflow::profiler;
    space->add_hostnames(options_.host_name);
    const int64_t local_begin = begin + options_.clock_offset_ns;
    uint64_t events = 0;
    xp::XPlane* host = space->add_planes();
    host->set_id(1);
    host->set_name("/host:CPU");
    (*host->mutable_event_metadata())[1].set_id(1);
    (*host->mutable_event_metadata())[1].set_name("train_step");
    (*host->mutable_stat_metadata())[1].set_id(1);
    (*host->mutable_stat_metadata())[1].set_name("step_num");
    const int64_t span = std::max<int64_t>(end - begin, 1000);
    for (int t = 0; t < 2; ++t) {
      xp::XLine* line = host->add_lines();
      line->set_id(t + 1);
      line->set_name("python thread " + std::to_string(t));
      line->set_timestamp_ns(local_begin);
      const int n = options_.thread_events;
      for (int i = 0; i < n; ++i) {
        xp::XEvent* e = line->add_events();
        e->set_metadata_id(1);
        e->set_offset_ps((span * i / n) * 1000);
        e->set_duration_ps((span / n / 2) * 1000);
        xp::XStat* step = e->add_stats();
        step->set_metadata_id(1);
        step->set_int64_value(i);
        ++events;
      }
    }
    xp::XPlane* device = space->add_planes();
    device->set_id(2);
    device->set_name("/device:TPU:0");
    (*device->mutable_stat_metadata())[1].set_id(1);
    (*device->mutable_stat_metadata())[1].set_name("group_id");
    (*device->mutable_event_metadata())[1].set_id(1);
    (*device->mutable_event_metadata())[1].set_name("all-reduce.1");
    (*device->mutable_event_metadata())[2].set_id(2);
    (*device->mutable_event_metadata())[2].set_name("all-gather.2");
    (*device->mutable_event_metadata())[3].set_id(3);
    (*device->mutable_event_metadata())[3].set_name("fusion.3");
    xp::XLine* ops = device->add_lines();
    ops->set_id(1);
    ops->set_name("XLA Ops");
    ops->set_timestamp_ns(local_begin);
    std::vector<int64_t> true_ends;
    const int c = options_.collectives;
    // The collectives end at common instants: the common start plus even
    // steps of the requested duration.
    const int64_t step = c > 0 ? duration_ns / (c + 2) : 0;
    for (int k = 0; k < c; ++k) {
      const int64_t true_end = anchor + (k + 1) * step + step / 2;
      // Recording ended early (Terminate): only what it saw.
      if (true_end + step / 4 > end) break;
      const int64_t local_end =
          true_end + options_.clock_offset_ns +
          JitterOf(options_.jitter_seed, k, options_.collective_jitter_ns);
      const int64_t duration = step / 4;
      // A fusion before it, then the collective.
      xp::XEvent* f = ops->add_events();
      f->set_metadata_id(3);
      f->set_offset_ps((local_end - 2 * duration - local_begin) * 1000);
      f->set_duration_ps(duration * 1000 / 2);
      xp::XEvent* e = ops->add_events();
      e->set_metadata_id(k % 2 == 0 ? 1 : 2);
      e->set_offset_ps((local_end - duration - local_begin) * 1000);
      e->set_duration_ps(duration * 1000);
      xp::XStat* group = e->add_stats();
      group->set_metadata_id(1);
      group->set_int64_value(k);
      true_ends.push_back(true_end);
      events += 2;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    events_sent_ = events;
    true_ends_ = std::move(true_ends);
  }

  const XProfHostOptions options_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mutex_;
  std::vector<tensorflow::ProfileRequest> requests_;
  std::vector<int64_t> received_at_;
  uint64_t events_sent_ = 0;
  bool saw_token_ = false;
  std::vector<int64_t> true_ends_;
  std::mutex wait_mutex_;
  std::condition_variable wait_cv_;
  bool terminated_ = false;        // guarded by wait_mutex_
  int terminates_ = 0;             // guarded by wait_mutex_
  std::string profiling_session_;  // guarded by wait_mutex_
};

// A gRPC server that knows no service (every call: UNIMPLEMENTED), or,
// with `profile_answer` set, answers tensorflow.ProfilerService/Profile
// with those bytes as they are (a damaged or hostile answer).
class RawGrpcServer {
 public:
  explicit RawGrpcServer(std::string profile_answer = "")
      : answer_(std::move(profile_answer)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~RawGrpcServer() {
    if (server_) server_->Shutdown();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool ok() const { return server_ != nullptr && port_ > 0; }

 private:
  class Reactor : public grpc::ServerGenericBidiReactor {
   public:
    Reactor(grpc::GenericCallbackServerContext* ctx, const std::string& answer)
        : answer_(answer) {
      if (ctx->method() != "/tensorflow.ProfilerService/Profile" ||
          answer_.empty()) {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""));
        return;
      }
      StartRead(&request_);
    }
    void OnReadDone(bool) override {
      grpc::Slice slice(answer_);
      response_ = grpc::ByteBuffer(&slice, 1);
      StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
    }
    void OnDone() override { delete this; }

   private:
    const std::string& answer_;
    grpc::ByteBuffer request_, response_;
  };
  class Service : public grpc::CallbackGenericService {
   public:
    explicit Service(const std::string* answer) : answer_(answer) {}
    grpc::ServerGenericBidiReactor* CreateReactor(
        grpc::GenericCallbackServerContext* ctx) override {
      return new Reactor(ctx, *answer_);
    }

   private:
    const std::string* answer_;
  };

  std::string answer_;
  Service service_{&answer_};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace podscope::profiler::testing

#endif  // PODSCOPE_TESTS_PROFILER_XPROF_TEST_SERVER_H_
