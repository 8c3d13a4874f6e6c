// A capture client's connection to one worker's profiler server: connects
// (with the token and TLS settings), asks who the worker is, measures its
// clock, and turns the server's errors into statuses naming the worker.
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CONNECTION_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/profiler_service.grpc.pb.h"
#include "podscope/profiler/xprof_service.grpc.pb.h"
#include "src/capture/clock_probes.h"

namespace podscope::profiler::internal {

class WorkerConnection {
 public:
  // Connects to `address` within options.connect_timeout_ms; Unavailable
  // naming the address when it does not answer.
  static absl::StatusOr<std::unique_ptr<WorkerConnection>> Connect(
      const std::string& address, const ConnectOptions& options);
  // The same without waiting for the connection: the first call finds out
  // (asynchronous clients give it wait_for_ready and a deadline).
  static absl::StatusOr<std::unique_ptr<WorkerConnection>> Open(
      const std::string& address, const ConnectOptions& options);
  // What Connect says of a worker it could not reach in time.
  static absl::Status Unreachable(const std::string& address,
                                  const ConnectOptions& options);

  // What is said of a server that answers neither protocol.
  static absl::Status SpeaksNeither(const std::string& address);

  // Adds the token and, when `timeout_ms` > 0, a deadline to a call.
  void Prepare(grpc::ClientContext* ctx, int64_t timeout_ms = 10000) const;

  // Who the worker is; also learns its clock probe port, if it has one.
  absl::StatusOr<proto::ProcessInfo> Info();
  // Learns the clock probe port from a GetInfo answer had otherwise (an
  // asynchronous call): probes take it when it answers a first probe
  // within a second (a firewall leaves the gRPC probes).
  void LearnProbePort(const proto::ProcessInfo& info);

  // `probes` NTP-style clock probes; the one with the smallest round trip.
  // On the worker's UDP probe port when it has one (and it answers), else
  // through gRPC.
  absl::StatusOr<ClockEstimate> Probe(int probes) const;

  // Answered probes discarded for timestamps that cannot be trusted
  // (base::CheckProbe), on either path.
  int64_t probes_discarded() const;

  // Whether probes take the UDP path.
  bool lean_probes() const { return udp_ != nullptr; }

  // Asks the worker to end the capture of `session_id` (any when empty).
  grpc::Status Stop(const std::string& session_id) const;

  proto::ProfilerService::Stub* stub() { return stub_.get(); }
  // XProf's service on the same channel.
  tensorflow::ProfilerService::Stub* xprof_stub() { return xprof_stub_.get(); }
  // The channel, for calls whose answers this side parses itself.
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Calls after this carry no token: XProf servers check none, and one
  // sent to them would only be exposed.
  void DropToken() { token_.clear(); }
  bool has_token() const { return !token_.empty(); }
  const std::string& address() const { return address_; }

  // What a failed GetInfo made asynchronously says: the worker was not
  // reached (in time), or the call's error.
  absl::Status InfoError(const grpc::Status& s,
                         const ConnectOptions& options) const;

  // `s` of `call` as a status naming the worker and the gRPC code.
  absl::Status Error(const std::string& call, const grpc::Status& s) const;

 private:
  WorkerConnection(std::string address, std::shared_ptr<grpc::Channel> channel,
                   std::string token);

  absl::StatusOr<ClockEstimate> ProbeThroughGrpc(int probes) const;

  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<proto::ProfilerService::Stub> stub_;
  std::unique_ptr<tensorflow::ProfilerService::Stub> xprof_stub_;
  std::string token_;
  std::unique_ptr<UdpProber> udp_;
  mutable std::atomic<int64_t> grpc_discarded_{0};
};

// A worker's channel opened and its GetInfo started on a completion queue
// (waiting for the connection within the connect timeout): what the
// fan-outs begin every worker with. The caller calls `call->Finish` with
// its tag, and keeps everything here until the tag comes back.
struct StartedInfo {
  std::unique_ptr<WorkerConnection> connection;
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientAsyncResponseReader<proto::ProcessInfo>> call;
};
absl::StatusOr<StartedInfo> StartInfo(const std::string& address,
                                      const ConnectOptions& options,
                                      grpc::CompletionQueue* cq);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CONNECTION_H_
