#include "src/capture/worker_connection.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "podscope/base/clock_fit.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/grpc_credentials.h"
#include "podscope/profiler/user_token.h"

namespace podscope::profiler::internal {
namespace {

namespace pb = ::podscope::profiler::proto;

std::string Describe(const grpc::Status& s) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int code = static_cast<int>(s.error_code());
  const char* name = code >= 0 && code <= 16 ? kNames[code] : "?";
  return absl::StrCat(name, ": ", s.error_message());
}

// A numeric IPv4 or IPv6 address is dialled as such ("ipv4:" / "ipv6:"),
// with no name resolution: a pod's hundreds of channels then open without
// a resolver's round trip each. "localhost" is the IPv4 loopback, where a
// profiler server listens by default (no resolver either: the system's
// c-ares keeps a few bytes of every lookup). Other names go through the
// resolver as usual. The authority stays what it would have been.
std::string ChannelTarget(const std::string& address,
                          grpc::ChannelArguments* args) {
  auto host_port = base::SplitHostPort(address, "the worker address");
  if (!host_port.ok()) return address;
  const std::string& host = host_port->first;
  unsigned char buf[sizeof(in6_addr)];
  std::string target;
  if (host == "localhost") {
    target = absl::StrCat("ipv4:127.0.0.1:", host_port->second);
  } else if (inet_pton(AF_INET, host.c_str(), buf) == 1) {
    target = "ipv4:" + address;
  } else if (inet_pton(AF_INET6, host.c_str(), buf) == 1) {
    target = "ipv6:" + address;
  } else {
    return address;
  }
  args->SetString(GRPC_ARG_DEFAULT_AUTHORITY, address);
  return target;
}

}  // namespace

absl::Status WorkerConnection::Unreachable(const std::string& address,
                                           const ConnectOptions& options) {
  return absl::UnavailableError(absl::StrCat(
      address, ": no connection within ", options.connect_timeout_ms,
      " ms (is its profiler server running and reachable?",
      options.tls_ca_file.empty()
          ? ")"
          : " An XProf server (JAX, TensorFlow, PyTorch/XLA) speaks "
            "plaintext only: leave out --tls_ca for it.)"));
}

absl::Status WorkerConnection::SpeaksNeither(const std::string& address) {
  return absl::UnimplementedError(absl::StrCat(
      address,
      ": speaks neither Podscope's profiler service nor XProf's "
      "tensorflow.ProfilerService (is this the profiler's port?)"));
}

absl::StatusOr<std::unique_ptr<WorkerConnection>> WorkerConnection::Open(
    const std::string& address, const ConnectOptions& options) {
  grpc::ChannelArguments args;
  // An XProf worker answers with its whole trace in one message.
  args.SetMaxReceiveMessageSize(static_cast<int>(
      std::clamp<int64_t>(options.max_message_mb, 1, 2047) << 20));
  PODSCOPE_ASSIGN_OR_RETURN(
      auto creds, ChannelCredentialsFromFiles(options.tls_ca_file,
                                              options.tls_server_name, &args));
  auto channel =
      grpc::CreateCustomChannel(ChannelTarget(address, &args), creds, args);
  auto token = ClientToken(options.token, address);
  if (!token.ok()) {
    return absl::Status(token.status().code(),
                        absl::StrCat(address, ": ", token.status().message()));
  }
  return std::unique_ptr<WorkerConnection>(
      new WorkerConnection(address, channel, *token));
}

absl::StatusOr<std::unique_ptr<WorkerConnection>> WorkerConnection::Connect(
    const std::string& address, const ConnectOptions& options) {
  PODSCOPE_ASSIGN_OR_RETURN(auto worker, Open(address, options));
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::milliseconds(options.connect_timeout_ms);
  if (!worker->channel_->WaitForConnected(deadline)) {
    return Unreachable(address, options);
  }
  return worker;
}

WorkerConnection::WorkerConnection(std::string address,
                                   std::shared_ptr<grpc::Channel> channel,
                                   std::string token)
    : address_(std::move(address)),
      channel_(channel),
      stub_(pb::ProfilerService::NewStub(channel)),
      xprof_stub_(tensorflow::ProfilerService::NewStub(channel)),
      token_(std::move(token)) {}

void WorkerConnection::Prepare(grpc::ClientContext* ctx,
                               int64_t timeout_ms) const {
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  if (timeout_ms > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(timeout_ms));
  }
}

absl::StatusOr<pb::ProcessInfo> WorkerConnection::Info() {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  pb::ProcessInfo info;
  grpc::Status s = stub_->GetInfo(&ctx, pb::GetInfoRequest(), &info);
  if (!s.ok()) return Error("GetInfo", s);
  LearnProbePort(info);
  return info;
}

void WorkerConnection::LearnProbePort(const pb::ProcessInfo& info) {
  if (info.probe_port() <= 0 || udp_) return;
  // A probe port that cannot be reached (a firewall) leaves gRPC probes.
  auto udp = UdpProber::Connect(HostOfAddress(address_), info.probe_port(),
                                info.probe_key());
  if (udp.ok() && (*udp)->ProbeOnce(1000).has_value()) udp_ = *std::move(udp);
}

absl::StatusOr<ClockEstimate> WorkerConnection::Probe(int probes) const {
  if (udp_) {
    auto e = udp_->Probe(probes);
    if (e.ok()) return e;
  }
  return ProbeThroughGrpc(probes);
}

absl::StatusOr<ClockEstimate> WorkerConnection::ProbeThroughGrpc(
    int probes) const {
  std::optional<ClockEstimate> best;
  grpc::Status last;
  int answered = 0;
  for (int i = 0; i < std::max(probes, 1); ++i) {
    grpc::ClientContext ctx;
    Prepare(&ctx, 2000);
    pb::ClockProbeRequest req;
    pb::ClockProbeResponse resp;
    base::ProbeTimes t;
    t.t1 = MonotonicNs();
    req.set_client_send_ns(t.t1);
    last = stub_->ProbeClock(&ctx, req, &resp);
    t.t4 = MonotonicNs();
    if (!last.ok()) continue;
    ++answered;
    t.t2 = resp.server_receive_ns();
    t.t3 = resp.server_send_ns();
    if (base::CheckProbe(t) != base::ProbeFault::kNone) {
      grpc_discarded_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const ClockEstimate e = EstimateOf(base::SamplePeerLocal(t));
    if (!best || e.uncertainty_ns < best->uncertainty_ns) best = e;
  }
  if (answered == 0) return Error("ProbeClock", last);
  if (!best) {
    return absl::UnavailableError(absl::StrCat(
        address_, ": no clock probe had timestamps that can be trusted"));
  }
  return *best;
}

int64_t WorkerConnection::probes_discarded() const {
  return grpc_discarded_.load(std::memory_order_relaxed) +
         (udp_ ? udp_->discarded() : 0);
}

grpc::Status WorkerConnection::Stop(const std::string& session_id) const {
  pb::StopRequest stop;
  stop.set_session_id(session_id);
  grpc::ClientContext ctx;
  Prepare(&ctx, 2000);
  pb::StopResponse stopped;
  return stub_->Stop(&ctx, stop, &stopped);
}

absl::Status WorkerConnection::Error(const std::string& call,
                                     const grpc::Status& s) const {
  return absl::Status(
      static_cast<absl::StatusCode>(s.error_code()),
      absl::StrCat(address_, ": ", call, " failed: ", Describe(s)));
}

absl::Status WorkerConnection::InfoError(const grpc::Status& s,
                                         const ConnectOptions& options) const {
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
      s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return Unreachable(address_, options);
  }
  return Error("GetInfo", s);
}

absl::StatusOr<StartedInfo> StartInfo(const std::string& address,
                                      const ConnectOptions& options,
                                      grpc::CompletionQueue* cq) {
  StartedInfo started;
  PODSCOPE_ASSIGN_OR_RETURN(started.connection,
                            WorkerConnection::Open(address, options));
  started.ctx = std::make_unique<grpc::ClientContext>();
  started.connection->Prepare(started.ctx.get(), options.connect_timeout_ms);
  started.ctx->set_wait_for_ready(true);
  started.call = started.connection->stub()->AsyncGetInfo(
      started.ctx.get(), pb::GetInfoRequest(), cq);
  return started;
}

}  // namespace podscope::profiler::internal
