#include "podscope/profiler/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/profiler_service.grpc.pb.h"
#include "src/server/server_internal.h"
#include "src/session_internal.h"

namespace podscope::profiler {
namespace {

namespace pb = ::podscope::profiler::proto;
using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;

std::string EnvOr(const std::string& value, const char* env) {
  if (!value.empty()) return value;
  const char* v = std::getenv(env);
  return v != nullptr ? v : "";
}

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read the TLS ", what, " file '", path, "'"));
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The bytes a capture's session writes, kept for every client of the
// capture (a client that joins late replays them from the start).
class CaptureStream {
 public:
  explicit CaptureStream(int64_t max_bytes) : max_bytes_(max_bytes) {}

  void Append(std::string_view bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    pieces_.emplace_back(bytes);
    total_ += static_cast<int64_t>(bytes.size());
    if (total_ > max_bytes_) overflow_ = true;
    cv_.notify_all();
  }

  void SetProgress(uint64_t events, uint64_t dropped) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_ = events;
    dropped_ = dropped;
  }

  void Finish(absl::Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    status_ = std::move(status);
    cv_.notify_all();
  }

  bool overflow() {
    std::lock_guard<std::mutex> lock(mutex_);
    return overflow_;
  }

  // Waits up to `wait` for bytes beyond `*cursor` (or the end), then moves
  // up to `max_bytes` of them into `out`. Returns true when the stream is
  // finished and `out` holds its last bytes.
  bool Next(size_t* cursor, std::string* out, size_t max_bytes,
            std::chrono::milliseconds wait, pb::CaptureData* progress,
            absl::Status* end_status) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, wait,
                 [&] { return *cursor < pieces_.size() || finished_; });
    out->clear();
    while (*cursor < pieces_.size() &&
           (out->empty() || out->size() + pieces_[*cursor].size() <= max_bytes)) {
      out->append(pieces_[*cursor]);
      ++*cursor;
    }
    progress->set_events(events_);
    progress->set_dropped(dropped_);
    *end_status = status_;
    return finished_ && *cursor == pieces_.size();
  }

 private:
  const int64_t max_bytes_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> pieces_;
  int64_t total_ = 0;
  bool overflow_ = false;
  bool finished_ = false;
  absl::Status status_;
  uint64_t events_ = 0, dropped_ = 0;
};

class StreamSink : public trace_format::RecordSink {
 public:
  explicit StreamSink(std::shared_ptr<CaptureStream> stream)
      : stream_(std::move(stream)) {}
  absl::Status Append(std::string_view bytes) override {
    pending_.append(bytes);
    return absl::OkStatus();
  }
  absl::Status Flush(bool) override {
    if (!pending_.empty()) {
      stream_->Append(pending_);
      pending_.clear();
    }
    return absl::OkStatus();
  }
  absl::Status Close() override { return Flush(false); }

 private:
  std::shared_ptr<CaptureStream> stream_;
  std::string pending_;
};

std::atomic<uint64_t> g_next_owner{1};

// One capture: the process's session, recording into a CaptureStream, with
// a controller thread that ends it at the latest deadline of its clients,
// on Stop, when every client has gone, or when it outgrows memory.
struct Capture {
  std::string session_id;
  uint64_t owner = 0;
  std::shared_ptr<CaptureStream> stream;
  int64_t started_ns = 0;
  int64_t deadline_ns = 0;  // guarded by the hub's mutex
  int clients = 0;          // guarded by the hub's mutex
  bool stop = false;        // guarded by the hub's mutex
  bool finished = false;    // guarded by the hub's mutex
  std::thread controller;
};

std::string MakeSessionId() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      now.time_since_epoch()).count() % 1000;
  return absl::StrCat(buf, ".", ms < 100 ? "0" : "", ms < 10 ? "0" : "", ms);
}

class CaptureHub {
 public:
  explicit CaptureHub(const ServerOptions& options) : options_(options) {}
  ~CaptureHub() { StopAll(); }

  // Joins the running capture or starts one.
  absl::StatusOr<std::shared_ptr<Capture>> Join(const pb::CaptureRequest& r,
                                                const std::string& peer) {
    if (r.duration_ms() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "duration_ms must be 0 (until stopped) or positive, not ",
          r.duration_ms()));
    }
    if (r.duration_ms() > options_.max_duration_ms) {
      return absl::InvalidArgumentError(absl::StrCat(
          "duration_ms ", r.duration_ms(), " exceeds this server's limit of ",
          options_.max_duration_ms, " ms"));
    }
    if (r.level() < 0 || r.level() > 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("level must be 0..3, not ", r.level()));
    }
    if (r.sampling_hz() < 0 || r.sampling_hz() > 10000) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sampling_hz must be 0..10000, not ", r.sampling_hz()));
    }
    if (r.compression_level() < -1 || r.compression_level() > 9) {
      return absl::InvalidArgumentError(absl::StrCat(
          "compression_level must be -1..9, not ", r.compression_level()));
    }
    const std::string wanted = r.session_id();
    if (!wanted.empty() && !IsValidSessionId(wanted)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "session id '", wanted, "' is not valid (1 to 128 of letters, "
          "digits, '-', '_', '.', ':', '+')"));
    }
    const int64_t now = MonotonicNs();
    const int64_t want_ns =
        (r.duration_ms() == 0 ? options_.max_duration_ms : r.duration_ms()) *
        1'000'000;
    std::unique_lock<std::mutex> lock(mutex_);
    if (current_ && !current_->finished) {
      Capture& c = *current_;
      if (!wanted.empty() && wanted != c.session_id) {
        return absl::FailedPreconditionError(absl::StrCat(
            "a capture for session '", c.session_id,
            "' is running; ask for that session (or none) to share it"));
      }
      if (c.stop) {
        return absl::UnavailableError("the running capture is stopping; retry");
      }
      if (c.clients >= options_.max_clients) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the running capture already has ", c.clients,
            " clients (the limit is ", options_.max_clients, ")"));
      }
      if (c.stream->overflow()) {
        return absl::UnavailableError(
            "the running capture has outgrown the bytes kept for late "
            "clients; retry when it ends");
      }
      c.clients += 1;
      c.deadline_ns = std::min(std::max(c.deadline_ns, now + want_ns),
                               c.started_ns + options_.max_duration_ms * 1'000'000);
      cv_.notify_all();
      return current_;
    }
    JoinFinishedLocked(lock);
    auto capture = std::make_shared<Capture>();
    capture->session_id = wanted.empty() ? MakeSessionId() : wanted;
    capture->owner = g_next_owner.fetch_add(1);
    capture->stream = std::make_shared<CaptureStream>(options_.max_capture_bytes);
    capture->started_ns = now;
    capture->deadline_ns = now + want_ns;
    capture->clients = 1;
    TraceOptions o;
    o.session_id = capture->session_id;
    o.level = r.level() == 0 ? Level::kInfo : static_cast<Level>(r.level());
    o.sampling_hz = r.sampling_hz();
    if (r.compression_level() >= 0) o.compression_level = r.compression_level();
    absl::Status s = internal::StartOwnedSession(
        std::make_unique<StreamSink>(capture->stream), o,
        absl::StrCat("remote capture '", capture->session_id, "' for ", peer),
        capture->owner);
    if (!s.ok()) return s;
    current_ = capture;
    capture->controller = std::thread([this, capture] { Control(capture); });
    return capture;
  }

  void Leave(const std::shared_ptr<Capture>& c) {
    std::lock_guard<std::mutex> lock(mutex_);
    c->clients -= 1;
    cv_.notify_all();
  }

  // Stops the capture named `session_id` (any, if empty).
  absl::StatusOr<std::string> Stop(const std::string& session_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!current_ || current_->finished || current_->stop) {
      return absl::NotFoundError(
          session_id.empty()
              ? std::string("no capture is running")
              : absl::StrCat("no capture of session '", session_id,
                             "' is running"));
    }
    if (!session_id.empty() && session_id != current_->session_id) {
      return absl::NotFoundError(absl::StrCat(
          "no capture of session '", session_id, "' is running (the running "
          "one is '", current_->session_id, "')"));
    }
    current_->stop = true;
    cv_.notify_all();
    return current_->session_id;
  }

  void StopAll() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (current_) current_->stop = true;
    cv_.notify_all();
    JoinFinishedLocked(lock, /*wait=*/true);
  }

 private:
  void Control(std::shared_ptr<Capture> c) {
    absl::Status end;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      while (true) {
        const int64_t now = MonotonicNs();
        if (c->stop || c->clients <= 0 || now >= c->deadline_ns) break;
        if (c->stream->overflow()) {
          end = absl::ResourceExhaustedError(absl::StrCat(
              "the capture ended early: it outgrew the server's ",
              options_.max_capture_bytes, "-byte limit"));
          break;
        }
        const int64_t wait_ns = std::min<int64_t>(c->deadline_ns - now, 100'000'000);
        cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
        lock.unlock();
        const SessionStats st = CurrentSessionStats();
        c->stream->SetProgress(st.events, st.dropped);
        lock.lock();
      }
    }
    absl::Status s = internal::StopOwnedSession(c->owner);
    if (!s.ok() && end.ok()) end = s;
    c->stream->Finish(end);
    std::lock_guard<std::mutex> lock(mutex_);
    c->finished = true;
    cv_.notify_all();
  }

  void JoinFinishedLocked(std::unique_lock<std::mutex>& lock, bool wait = false) {
    if (!current_) return;
    if (wait) cv_.wait(lock, [&] { return current_->finished; });
    if (!current_->finished) return;
    std::shared_ptr<Capture> old = std::move(current_);
    lock.unlock();
    if (old->controller.joinable()) old->controller.join();
    lock.lock();
  }

  const ServerOptions options_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::shared_ptr<Capture> current_;
};

class Service final : public pb::ProfilerService::Service {
 public:
  Service(const ServerOptions& options, std::string token)
      : options_(options), token_(std::move(token)), hub_(options) {}

  void Shutdown() { hub_.StopAll(); }

  Status GetInfo(ServerContext* ctx, const pb::GetInfoRequest*,
                 pb::ProcessInfo* info) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    internal::FillProcessInfo(info);
    bool active = false;
    info->set_active_session(internal::ActiveSessionId(&active));
    info->set_capturing(active);
    info->set_max_duration_ms(options_.max_duration_ms);
    info->set_max_clients(options_.max_clients);
    return Status::OK;
  }

  Status ProbeClock(ServerContext* ctx, const pb::ClockProbeRequest* request,
                    pb::ClockProbeResponse* response) override {
    const int64_t received = ProfilerNowNs();
    if (Status s = Authorize(ctx); !s.ok()) return s;
    response->set_client_send_ns(request->client_send_ns());
    response->set_server_receive_ns(received);
    response->set_server_send_ns(ProfilerNowNs());
    return Status::OK;
  }

  Status Stop(ServerContext* ctx, const pb::StopRequest* request,
              pb::StopResponse* response) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    auto stopped = hub_.Stop(request->session_id());
    if (!stopped.ok()) return ToGrpc(stopped.status());
    response->set_session_id(*stopped);
    return Status::OK;
  }

  Status Capture(ServerContext* ctx, const pb::CaptureRequest* request,
                 grpc::ServerWriter<pb::CaptureData>* writer) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    std::string peer = ctx->peer();
    if (!request->client().empty()) {
      peer = absl::StrCat(std::string(request->client()), " at ", peer);
    }
    auto joined = hub_.Join(*request, peer);
    if (!joined.ok()) return ToGrpc(joined.status());
    std::shared_ptr<struct Capture> capture = *joined;
    size_t cursor = 0;
    bool first = true;
    std::string bytes;
    absl::Status end;
    Status result = Status::OK;
    while (true) {
      if (ctx->IsCancelled()) {
        result = Status(StatusCode::CANCELLED, "the client went away");
        break;
      }
      pb::CaptureData data;
      const bool done = capture->stream->Next(
          &cursor, &bytes, kMaxMessageBytes, std::chrono::milliseconds(250),
          &data, &end);
      if (bytes.empty() && !done && !first) continue;
      data.set_records(bytes);
      if (first) data.set_session_id(capture->session_id);
      data.set_done(done);
      first = false;
      if (!writer->Write(data)) {
        result = Status(StatusCode::CANCELLED, "the client went away");
        break;
      }
      if (done) {
        if (!end.ok()) result = ToGrpc(end);
        break;
      }
    }
    hub_.Leave(capture);
    return result;
  }

 private:
  static constexpr size_t kMaxMessageBytes = 1 << 20;

  static Status ToGrpc(const absl::Status& s) {
    return Status(static_cast<StatusCode>(s.code()), std::string(s.message()));
  }

  Status Authorize(ServerContext* ctx) const {
    if (token_.empty()) return Status::OK;
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it == md.end()) {
      return Status(StatusCode::UNAUTHENTICATED,
                    "this profiler server requires a token (authorization: "
                    "Bearer <token>)");
    }
    const std::string given(it->second.data(), it->second.size());
    const std::string expected = "Bearer " + token_;
    // Compare without stopping at the first difference.
    unsigned diff = given.size() == expected.size() ? 0u : 1u;
    for (size_t i = 0; i < given.size(); ++i) {
      diff |= static_cast<unsigned>(given[i]) ^
              static_cast<unsigned>(expected[i % expected.size()]);
    }
    if (diff != 0) {
      return Status(StatusCode::UNAUTHENTICATED, "wrong profiler token");
    }
    return Status::OK;
  }

  const ServerOptions options_;
  const std::string token_;
  CaptureHub hub_;
};

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" ||
         host.rfind("127.", 0) == 0;
}

class ServerImpl : public ProfilerServer {
 public:
  ServerImpl(std::unique_ptr<Service> service,
             std::unique_ptr<grpc::Server> server, int port, std::string host)
      : service_(std::move(service)),
        server_(std::move(server)),
        port_(port),
        host_(std::move(host)) {}
  ~ServerImpl() override { Stop(); }

  int port() const override { return port_; }
  std::string address() const override {
    std::string h = host_;
    if (h == "0.0.0.0") h = "127.0.0.1";
    if (h == "::" || h == "[::]") h = "[::1]";
    if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
    return absl::StrCat(h, ":", port_);
  }
  void Stop() override {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    if (stopped_) return;
    stopped_ = true;
    service_->Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
    server_->Wait();
  }

 private:
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  const int port_;
  const std::string host_;
  std::mutex stop_mutex_;
  bool stopped_ = false;
};

}  // namespace

namespace internal {

void FillProcessInfo(pb::ProcessInfo* info) {
  info->set_host(HostNameForFiles());
  info->set_pid(getpid());
  ProcessFactsSnapshot facts = SnapshotProcessFacts();
  info->set_process_index(facts.process_index);
  info->set_process_count(facts.process_count);
  for (const auto& d : facts.devices) *info->add_devices() = d;
  info->set_producer("podscope profiler 0.1.0");
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) info->add_command_line(arg);
  pb::ClockFacts* clock = info->mutable_clock();
  clock->set_monotonic_ns(ProfilerNowNs());
  clock->set_realtime_ns(RealtimeNs());
  clock->set_invariant_tsc(CpuHasInvariantTsc());
  clock->set_source(internal::g_use_tsc ? "tsc" : "clock_gettime");
  const ClockSkew& skew = TestClockSkew();
  clock->set_test_offset_ns(skew.offset_ns);
  clock->set_test_drift_ppm(skew.drift_ppm);
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<ProfilerServer>> StartServer(
    int port, const ServerOptions& options) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("StartServer: port ", port, " is not 0..65535"));
  }
  if (options.max_duration_ms <= 0 || options.max_clients <= 0 ||
      options.max_capture_bytes <= 0) {
    return absl::InvalidArgumentError(
        "StartServer: max_duration_ms, max_clients and max_capture_bytes "
        "must be positive");
  }
  std::string host = EnvOr(options.bind_address, "PODSCOPE_PROFILER_BIND");
  if (host.empty()) host = "127.0.0.1";
  const std::string token = EnvOr(options.token, "PODSCOPE_PROFILER_TOKEN");
  if (!IsLoopback(host) && token.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "StartServer: binding ", host,
        " exposes the profiler beyond this machine; set a token "
        "(ServerOptions::token or PODSCOPE_PROFILER_TOKEN)"));
  }
  const std::string cert = EnvOr(options.tls_cert_file, "PODSCOPE_PROFILER_TLS_CERT");
  const std::string key = EnvOr(options.tls_key_file, "PODSCOPE_PROFILER_TLS_KEY");
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError(
        "StartServer: TLS needs both a certificate and a key file");
  }
  if (!cert.empty()) {
    auto cert_pem = ReadFile(cert, "certificate");
    if (!cert_pem.ok()) return cert_pem.status();
    auto key_pem = ReadFile(key, "key");
    if (!key_pem.ok()) return key_pem.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  std::string listen = host;
  if (listen.find(':') != std::string::npos && listen.front() != '[') {
    listen = "[" + listen + "]";
  }
  listen = absl::StrCat(listen, ":", port);

  auto service = std::make_unique<Service>(options, token);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(listen, creds, &bound);
  builder.RegisterService(service.get());
  // A second server on a port in use must fail, not share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(1 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound == 0) {
    return absl::UnavailableError(absl::StrCat(
        "StartServer: cannot listen on ", listen,
        " (port in use, or no such local address)"));
  }
  return std::unique_ptr<ProfilerServer>(
      new ServerImpl(std::move(service), std::move(server), bound, host));
}

}  // namespace podscope::profiler
