#include "podscope/profiler/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/mutex_checks.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"
#include "podscope/base/time.h"
#include "podscope/profiler/bearer_token.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/clock_sync.h"
#include "podscope/profiler/flight_recorder.h"
#include "podscope/profiler/grpc_credentials.h"
#include "podscope/profiler/grpc_status.h"
#include "podscope/profiler/profiler_service.grpc.pb.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/user_token.h"
#include "src/server/capture_hub.h"
#include "src/server/capture_writer.h"
#include "src/server/probe_responder.h"
#include "src/server/server_internal.h"
#include "src/server/xprof_service.h"
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

using base::RealtimeNs;

// The token every call must carry: the configured one, else
// $PODSCOPE_PROFILER_TOKEN, else (on loopback) this user's token, so that
// other users of a shared machine cannot call in. Empty only when the
// environment variable is set and empty on loopback: open on purpose.
absl::StatusOr<std::string> ServerToken(const ServerOptions& options,
                                        const std::string& host) {
  if (!options.token.empty()) return options.token;
  const char* env = std::getenv("PODSCOPE_PROFILER_TOKEN");
  if (env != nullptr && *env != '\0') return std::string(env);
  if (!base::IsLoopbackHost(host)) {
    return absl::FailedPreconditionError(
        absl::StrCat("StartServer: binding ", host,
                     " exposes the profiler beyond this machine; set a token "
                     "(ServerOptions::token or PODSCOPE_PROFILER_TOKEN)"));
  }
  if (env != nullptr) return std::string();
  auto token = UserToken(/*create=*/true);
  if (!token.ok()) {
    return absl::Status(
        token.status().code(),
        absl::StrCat("StartServer: ", token.status().message()));
  }
  return token;
}

// Capture is served by a callback reactor (capture_writer.h): no thread
// per client; the short calls keep gRPC's synchronous threads.
class Service final : public pb::ProfilerService::WithCallbackMethod_Capture<
                          pb::ProfilerService::Service> {
 public:
  Service(const ServerOptions& options, std::string token,
          std::unique_ptr<internal::ProbeResponder> probes)
      : options_(options),
        token_(std::move(token)),
        hub_(options),
        xprof_(internal::MakeXprofService(options_, token_, &hub_)),
        probes_(std::move(probes)) {}

  void Shutdown() { hub_.StopAll(); }
  // XProf's tensorflow.ProfilerService, on the same captures.
  grpc::Service* xprof() { return xprof_.get(); }

  Status GetInfo(ServerContext* ctx, const pb::GetInfoRequest*,
                 pb::ProcessInfo* info) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    internal::FillProcessInfo(info);
    if (!options_.host_name.empty()) info->set_host(options_.host_name);
    bool active = false;
    info->set_active_session(internal::ActiveSessionId(&active));
    info->set_capturing(active);
    info->set_max_duration_ms(options_.max_duration_ms);
    info->set_max_clients(options_.max_clients);
    if (probes_) {
      info->set_probe_port(probes_->port());
      info->set_probe_key(probes_->key());
    }
    info->set_worker_writes(!options_.capture_root.empty());
    info->set_job_clock(LatestReferenceClockOffset().has_value());
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
    if (!stopped.ok()) return ToGrpcStatus(stopped.status());
    response->set_session_id(*stopped);
    return Status::OK;
  }

  Status DumpFlightRecorder(ServerContext* ctx, const pb::DumpRequest* request,
                            pb::DumpResponse* response) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    const std::string root = EnvOr(options_.dump_root, "PODSCOPE_DUMP_ROOT");
    if (root.empty()) {
      return Status(StatusCode::FAILED_PRECONDITION,
                    "this profiler server has no dump root "
                    "(ServerOptions::dump_root or PODSCOPE_DUMP_ROOT)");
    }
    // The name becomes a path only as the sanitiser leaves it: a name it
    // would change is refused rather than silently renamed.
    const std::string& session = request->session();
    if (!IsValidSessionId(session) ||
        base::SafeFileComponent(session) != session) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "DumpRequest.session must be one folder name (letters, "
                    "digits, '-', '_', '.', ':', '+', not starting with '.' "
                    "or '-'; at most 128)");
    }
    std::string reason = request->reason().substr(0, 256);
    for (char& c : reason) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    auto dump = profiler::DumpFlightRecorder(root + "/" + session, reason);
    if (!dump.ok()) return ToGrpcStatus(dump.status());
    response->set_path(absl::StrCat(
        session, "/", std::filesystem::path(dump->path).filename().string()));
    response->set_events(dump->events);
    response->set_bytes(dump->bytes);
    return Status::OK;
  }

  grpc::ServerWriteReactor<pb::CaptureData>* Capture(
      grpc::CallbackServerContext* ctx,
      const pb::CaptureRequest* request) override {
    if (Status s = Authorize(ctx); !s.ok()) return internal::RefuseCapture(s);
    std::string peer = ctx->peer();
    if (!request->client().empty()) {
      peer = absl::StrCat(std::string(request->client()), " at ", peer);
    }
    // Starting a capture (its file, its session) takes a few milliseconds
    // here; only a request that finds a capture ending waits for its end.
    auto joined = hub_.Join(*request, peer);
    if (!joined.ok())
      return internal::RefuseCapture(ToGrpcStatus(joined.status()));
    return internal::StartCaptureWriter(&hub_, *std::move(joined));
  }

 private:
  Status Authorize(grpc::ServerContextBase* ctx) const {
    return CheckBearerToken(*ctx, token_,
                            "this profiler server requires a token "
                            "(authorization: Bearer <token>)",
                            "wrong profiler token");
  }

  const ServerOptions options_;
  const std::string token_;
  internal::CaptureHub hub_;
  std::unique_ptr<grpc::Service> xprof_;
  // Null when the UDP port could not be bound: clients probe through gRPC.
  std::unique_ptr<internal::ProbeResponder> probes_;
};

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
    return base::JoinHostPort(h, port_);
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
  base::TurnOffMutexDeadlockDetection();
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
  PODSCOPE_ASSIGN_OR_RETURN(auto token, ServerToken(options, host));
  const std::string cert =
      EnvOr(options.tls_cert_file, "PODSCOPE_PROFILER_TLS_CERT");
  const std::string key =
      EnvOr(options.tls_key_file, "PODSCOPE_PROFILER_TLS_KEY");
  auto creds = ServerCredentialsFromFiles(cert, key);
  if (!creds.ok()) {
    return absl::Status(
        creds.status().code(),
        absl::StrCat("StartServer: ", creds.status().message()));
  }
  ServerOptions resolved = options;
  resolved.capture_root = EnvOr(options.capture_root, "PODSCOPE_CAPTURE_ROOT");
  const std::string listen = base::JoinHostPort(host, port);
  // A job's launcher turns the recorder on in every rank this way.
  if (absl::Status s = StartFlightRecorderFromEnv(); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("StartServer: ", s.message()));
  }

  // A scheduled start turns its instant into ticks with this: calibrated
  // now rather than when a capture arrives.
  (void)ProcessTickCalibration();
  auto probes = internal::ProbeResponder::Start(host);
  auto service = std::make_unique<Service>(
      resolved, token, probes.ok() ? *std::move(probes) : nullptr);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(listen, *creds, &bound);
  builder.RegisterService(service.get());
  builder.RegisterService(service->xprof());
  // A second server on a port in use must fail, not share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(1 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound == 0) {
    return absl::UnavailableError(
        absl::StrCat("StartServer: cannot listen on ", listen,
                     " (port in use, or no such local address)"));
  }
  auto started = std::unique_ptr<ProfilerServer>(
      new ServerImpl(std::move(service), std::move(server), bound, host));
  if (token.empty()) {
    std::fprintf(stderr,
                 "podscope: the profiler server at %s takes calls from every "
                 "user of this machine (PODSCOPE_PROFILER_TOKEN is empty)\n",
                 started->address().c_str());
  }
  return started;
}

}  // namespace podscope::profiler
