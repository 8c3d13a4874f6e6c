// CoordinationClient: the gRPC client of the coordination service, and the
// job's KeyValueStore.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/mutex_checks.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"
#include "podscope/job/coordination.h"
#include "podscope/job/coordination_service.grpc.pb.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/grpc_credentials.h"
#include "src/doctor_wire.h"
#include "src/rank_credential.h"

namespace podscope::job {

namespace pb = ::podscope::job::coordination;

namespace {

// Calls in flight get at least this long beyond the wait they ask the
// service for, so that the service's own answer (naming what is missing)
// arrives before the client's deadline.
constexpr auto kAnswerMargin = std::chrono::seconds(5);

std::chrono::system_clock::time_point After(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

int64_t Ms(absl::Duration d) {
  return std::max<int64_t>(absl::ToInt64Milliseconds(d), 0);
}

}  // namespace

class CoordinationClient::Impl {
 public:
  Impl(std::string address, std::string token,
       std::shared_ptr<grpc::ChannelCredentials> creds,
       grpc::ChannelArguments args)
      : address_(std::move(address)), token_(std::move(token)) {
    // Rank 0 may come up after the others: a refused connection is tried
    // again after 100 ms, growing to 1 s. gRPC reads the "minimum reconnect
    // backoff" as the least time one attempt (TCP, TLS and HTTP/2 handshakes)
    // may take; it stays at 20 s, since on a loaded host a TLS handshake can
    // take far more than 100 ms, and an attempt cut short fails the call
    // ("tcp handshaker shutdown") while its coordinator is up.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20000);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // The largest answer is a directory page (4 MiB) or a value (1 MiB).
    args.SetMaxReceiveMessageSize(16 << 20);
    channel_ = grpc::CreateCustomChannel(address_, creds, args);
    stub_ = pb::CoordinationService::NewStub(channel_);
  }

  // A call's context, registered so Abort can cancel it.
  class Call {
   public:
    Call(Impl* impl, std::chrono::system_clock::time_point deadline)
        : impl_(impl) {
      ctx.set_deadline(deadline);
      if (!impl->token_.empty()) {
        ctx.AddMetadata("authorization", "Bearer " + impl->token_);
      }
      std::lock_guard<std::mutex> lock(impl_->mu_);
      if (!impl_->secret_.empty()) {
        ctx.AddMetadata(internal::kRankMetadata, absl::StrCat(impl_->rank_));
        ctx.AddMetadata(internal::kSecretMetadata, impl_->secret_);
      }
      impl_->calls_.insert(&ctx);
      if (!impl_->abort_.ok()) ctx.TryCancel();
    }
    ~Call() {
      std::lock_guard<std::mutex> lock(impl_->mu_);
      impl_->calls_.erase(&ctx);
    }
    grpc::ClientContext ctx;

   private:
    Impl* impl_;
  };

  absl::Status aborted() {
    std::lock_guard<std::mutex> lock(mu_);
    return abort_;
  }

  // Converts a call's result; a call cancelled by Abort reports the abort.
  absl::Status Result(const grpc::Status& s, const std::string& what) {
    if (s.ok()) return absl::OkStatus();
    if (absl::Status a = aborted(); !a.ok()) return a;
    const auto code = static_cast<absl::StatusCode>(s.error_code());
    if (code == absl::StatusCode::kUnavailable &&
        s.error_message().find("shutting down") == std::string::npos) {
      return absl::UnavailableError(
          absl::StrCat(what, ": the job's coordinator at ", address_,
                       " is unreachable (", s.error_message(), ")"));
    }
    if (code == absl::StatusCode::kDeadlineExceeded &&
        s.error_message() == "Deadline Exceeded") {
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": no answer from the job's coordinator at ",
                       address_, " in time"));
    }
    return absl::Status(code, s.error_message());
  }

  void Abort(const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!abort_.ok()) return;
    abort_ = status;
    for (grpc::ClientContext* ctx : calls_) ctx->TryCancel();
  }

  void SetCredential(int rank, std::string secret) {
    std::lock_guard<std::mutex> lock(mu_);
    rank_ = rank;
    secret_ = std::move(secret);
  }

  const std::string address_;
  const std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::CoordinationService::Stub> stub_;
  std::mutex mu_;
  std::set<grpc::ClientContext*> calls_;  // guarded by mu_
  absl::Status abort_;                    // guarded by mu_
  int rank_ = -1;                         // guarded by mu_
  std::string secret_;                    // guarded by mu_; after Register
};

CoordinationClient::CoordinationClient(std::string address,
                                       std::unique_ptr<Impl> impl)
    : address_(std::move(address)), impl_(std::move(impl)) {}

CoordinationClient::~CoordinationClient() = default;

absl::StatusOr<std::unique_ptr<CoordinationClient>> CoordinationClient::Create(
    const std::string& address, const std::string& token, const JobTls& tls) {
  base::TurnOffMutexDeadlockDetection();
  PODSCOPE_ASSIGN_OR_RETURN(
      auto split, base::SplitHostPort(address, "coordinator address"));
  grpc::ChannelArguments args;
  PODSCOPE_ASSIGN_OR_RETURN(auto creds,
                            profiler::ChannelCredentialsFromFiles(
                                tls.ca_file, tls.server_name, &args));
  return std::unique_ptr<CoordinationClient>(new CoordinationClient(
      address, std::make_unique<Impl>(address, token, std::move(creds),
                                      std::move(args))));
}

void CoordinationClient::Abort(const absl::Status& status) {
  impl_->Abort(status);
}

absl::StatusOr<RegisterResult> CoordinationClient::Register(
    int rank, int world_size, const std::string& host, int64_t pid,
    uint64_t incarnation, absl::Duration timeout) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::RegisterRequest req;
  req.set_rank(rank);
  req.set_world_size(world_size);
  req.set_host(host);
  req.set_pid(pid);
  req.set_incarnation(incarnation);
  req.set_timeout_ms(Ms(timeout));
  pb::RegisterResponse resp;
  grpc::Status s;
  {
    Impl::Call call(impl_.get(), After(timeout) + kAnswerMargin);
    // Waits for a coordinator that is not up yet.
    call.ctx.set_wait_for_ready(true);
    s = impl_->stub_->Register(&call.ctx, req, &resp);
  }
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      s.error_message() == "Deadline Exceeded") {
    return absl::UnavailableError(absl::StrCat(
        "rank ", rank, ": no coordinator answered at ", address_, " within ",
        absl::FormatDuration(timeout + absl::Seconds(5)),
        " (is rank 0 running, and are MASTER_ADDR / MASTER_PORT right?)"));
  }
  if (absl::Status r = impl_->Result(s, "register"); !r.ok()) return r;
  impl_->SetCredential(rank, resp.rank_secret());
  RegisterResult result;
  for (const std::string& h : resp.hosts()) result.hosts.push_back(h);
  result.heartbeat_interval = absl::Milliseconds(resp.heartbeat_interval_ms());
  result.dead_after = absl::Milliseconds(resp.dead_after_ms());
  return result;
}

absl::StatusOr<HeartbeatResult> CoordinationClient::Heartbeat(
    int rank, uint64_t incarnation, absl::Duration timeout, int64_t (*clock)(),
    const RankState* state) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::HeartbeatRequest req;
  req.set_rank(rank);
  req.set_incarnation(incarnation);
  if (state != nullptr) {
    RankState trimmed = *state;
    TrimRankState(trimmed);
    internal::ToProto(trimmed, req.mutable_state());
  }
  pb::HeartbeatResponse resp;
  HeartbeatResult result;
  grpc::Status s;
  {
    Impl::Call call(impl_.get(), After(timeout));
    result.probe.t1 = clock();
    req.set_client_send_ns(result.probe.t1);
    s = impl_->stub_->Heartbeat(&call.ctx, req, &resp);
    result.probe.t4 = clock();
  }
  if (absl::Status r = impl_->Result(s, "heartbeat"); !r.ok()) return r;
  result.probe.t2 = resp.server_receive_ns();
  result.probe.t3 = resp.server_send_ns();
  if (resp.job_error_code() != 0) {
    result.job_status = absl::Status(
        static_cast<absl::StatusCode>(resp.job_error_code()), resp.job_error());
  }
  if (resp.verdict_kind() > 0 &&
      resp.verdict_kind() <= static_cast<int>(VerdictKind::kDead)) {
    result.verdict_kind = static_cast<VerdictKind>(resp.verdict_kind());
    result.verdict = resp.verdict();
    result.verdict_key = resp.verdict_key();
    result.verdict_rank = resp.verdict_rank();
    result.verdict_group = resp.verdict_group();
    result.verdict_sequence = resp.verdict_sequence();
  }
  return result;
}

absl::Status CoordinationClient::CaptureRanks(
    const profiler::CaptureOptions& request,
    const std::function<void(const profiler::CaptureProgress&)>& progress,
    const std::atomic<bool>* stop, std::vector<profiler::WorkerResult>* ranks) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::CaptureRanksRequest req;
  req.set_session(request.session);
  req.set_duration_ms(request.duration_ms);
  req.set_level(request.level);
  req.set_sampling_hz(request.sampling_hz);
  req.set_by_steps(request.by_steps);
  req.set_first_step(request.first_step);
  req.set_last_step(request.last_step);
  req.set_start_lead_ms(request.start_lead_ms);
  req.set_client("podscope capture");
  // The capture, its lead, and a minute for the ranks to reach and end.
  Impl::Call call(impl_.get(), After(absl::Milliseconds(request.duration_ms +
                                                        request.start_lead_ms) +
                                     absl::Seconds(60)));
  const int64_t t0 = profiler::ProfilerNowNs();
  auto reader = impl_->stub_->CaptureRanks(&call.ctx, req);
  pb::CaptureRanksReply reply;
  bool stop_sent = false;
  bool done = false;
  while (reader->Read(&reply)) {
    if (reply.done()) {
      done = true;
      break;
    }
    profiler::CaptureProgress p;
    p.workers = reply.workers();
    p.streaming = reply.streaming();
    p.finished = reply.finished();
    p.failed = reply.failed();
    p.bytes = reply.bytes();
    p.events = reply.events();
    p.elapsed_ms = (profiler::ProfilerNowNs() - t0) / 1'000'000;
    if (progress) progress(p);
    if (stop != nullptr && stop->load() && !stop_sent) {
      stop_sent = true;
      pb::StopRankCaptureRequest stop_req;
      stop_req.set_session(request.session);
      pb::StopRankCaptureResponse stop_resp;
      Impl::Call stop_call(impl_.get(), After(absl::Seconds(10)));
      (void)impl_->stub_->StopRankCapture(&stop_call.ctx, stop_req, &stop_resp);
    }
  }
  if (done) call.ctx.TryCancel();  // nothing more is read
  const grpc::Status s = reader->Finish();
  if (!done) {
    absl::Status r = impl_->Result(s, "relayed capture");
    if (r.ok()) {
      r = absl::DataLossError(
          "relayed capture: the coordinator ended without the ranks' "
          "outcomes");
    }
    return r;
  }
  ranks->clear();
  for (const pb::RankCapture& r : reply.ranks()) {
    profiler::WorkerResult w;
    w.rank = r.rank();
    w.address = r.address();
    w.ok = r.ok();
    w.error = r.error();
    w.path = r.path();
    w.host = r.host();
    w.pid = r.pid();
    w.bytes = r.bytes();
    w.events = r.events();
    w.dropped = r.dropped();
    w.crc32 = r.crc32();
    w.window_start_ns = r.window_start_ns();
    w.window_end_ns = r.window_end_ns();
    w.start_at_ns = r.start_at_job_ns();
    w.job_clock = r.job_clock();
    w.received_bytes = r.received_bytes();
    w.written_by_worker = true;
    w.relayed_by = impl_->address_;
    if (r.reached()) {
      w.protocol = "podscope";
      w.alignment = "job clock";
    }
    ranks->push_back(std::move(w));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobStateView> CoordinationClient::JobState(
    absl::Duration timeout) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::JobStateRequest req;
  pb::JobStateResponse resp;
  {
    Impl::Call call(impl_.get(), After(timeout));
    absl::Status s = impl_->Result(
        impl_->stub_->JobState(&call.ctx, req, &resp), "job state");
    if (!s.ok()) return s;
  }
  JobStateView view;
  view.now_ns = resp.now_ns();
  if (resp.verdict_kind() > 0 &&
      resp.verdict_kind() <= static_cast<int>(VerdictKind::kDead)) {
    view.verdict_kind = static_cast<VerdictKind>(resp.verdict_kind());
    view.verdict = resp.verdict();
  }
  if (resp.job_error_code() != 0) {
    view.job_status = absl::Status(
        static_cast<absl::StatusCode>(resp.job_error_code()), resp.job_error());
  }
  for (const pb::RankView& r : resp.ranks()) {
    RankView v;
    v.rank = r.rank();
    v.registered = r.registered();
    v.host = r.host();
    v.pid = r.pid();
    v.heartbeat_age_ms = r.heartbeat_age_ms();
    v.leaving = r.leaving();
    if (r.has_state()) {
      auto state = internal::FromProto(r.state());
      if (!state.ok()) {
        return absl::DataLossError(absl::StrCat(
            "job state: the coordinator sent rank ", r.rank(),
            "'s state beyond the doctor's limits: ", state.status().message()));
      }
      v.state = *std::move(state);
    }
    view.ranks.push_back(std::move(v));
  }
  return view;
}

absl::Status CoordinationClient::Barrier(std::string_view name, int rank,
                                         absl::Duration timeout) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::BarrierRequest req;
  req.set_name(std::string(name));
  req.set_rank(rank);
  req.set_timeout_ms(Ms(timeout));
  pb::BarrierResponse resp;
  Impl::Call call(impl_.get(), After(timeout) + kAnswerMargin);
  return impl_->Result(impl_->stub_->Barrier(&call.ctx, req, &resp),
                       absl::StrCat("barrier '", std::string(name), "'"));
}

absl::Status CoordinationClient::Shutdown(int rank, absl::Duration timeout) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::ShutdownRequest req;
  req.set_rank(rank);
  req.set_timeout_ms(Ms(timeout));
  pb::ShutdownResponse resp;
  Impl::Call call(impl_.get(), After(timeout) + kAnswerMargin);
  return impl_->Result(impl_->stub_->Shutdown(&call.ctx, req, &resp),
                       "shutdown barrier");
}

absl::Status CoordinationClient::Set(std::string_view key,
                                     std::string_view value) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::KeySetRequest req;
  req.set_key(std::string(key));
  req.set_value(std::string(value));
  pb::KeySetResponse resp;
  Impl::Call call(impl_.get(), After(absl::Seconds(30)));
  return impl_->Result(impl_->stub_->KeySet(&call.ctx, req, &resp),
                       absl::StrCat("set '", std::string(key), "'"));
}

absl::StatusOr<std::string> CoordinationClient::Get(std::string_view key) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::KeyGetRequest req;
  req.set_key(std::string(key));
  pb::KeyGetResponse resp;
  Impl::Call call(impl_.get(), After(absl::Seconds(30)));
  absl::Status s = impl_->Result(impl_->stub_->KeyGet(&call.ctx, req, &resp),
                                 absl::StrCat("get '", std::string(key), "'"));
  if (!s.ok()) return s;
  return std::move(*resp.mutable_value());
}

absl::StatusOr<std::string> CoordinationClient::BlockingGet(
    std::string_view key, absl::Duration timeout) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::KeyGetRequest req;
  req.set_key(std::string(key));
  // At least a millisecond, so that the service waits rather than answering
  // NOT_FOUND at once.
  req.set_wait_ms(std::max<int64_t>(Ms(timeout), 1));
  pb::KeyGetResponse resp;
  Impl::Call call(impl_.get(), After(timeout) + kAnswerMargin);
  absl::Status s =
      impl_->Result(impl_->stub_->KeyGet(&call.ctx, req, &resp),
                    absl::StrCat("blocking get '", std::string(key), "'"));
  if (!s.ok()) return s;
  return std::move(*resp.mutable_value());
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
CoordinationClient::GetDirectory(std::string_view prefix) {
  std::vector<std::pair<std::string, std::string>> out;
  pb::KeyDirectoryRequest req;
  req.set_prefix(std::string(prefix));
  while (true) {
    if (absl::Status a = impl_->aborted(); !a.ok()) return a;
    pb::KeyDirectoryResponse resp;
    Impl::Call call(impl_.get(), After(absl::Seconds(30)));
    absl::Status s =
        impl_->Result(impl_->stub_->KeyDirectory(&call.ctx, req, &resp),
                      absl::StrCat("directory '", std::string(prefix), "'"));
    if (!s.ok()) return s;
    for (pb::KeyValue& kv : *resp.mutable_entries()) {
      // Pages must move forward within the prefix: anything else is a
      // coordinator that would make this loop forever.
      if (kv.key().compare(0, prefix.size(), prefix) != 0 ||
          (!out.empty() && kv.key() <= out.back().first)) {
        return absl::DataLossError(
            absl::StrCat("directory '", std::string(prefix),
                         "': the coordinator answered keys out of order"));
      }
      out.emplace_back(std::move(*kv.mutable_key()),
                       std::move(*kv.mutable_value()));
    }
    if (!resp.more() || resp.entries_size() == 0) break;
    req.set_page_after(out.back().first);
  }
  return out;
}

absl::Status CoordinationClient::Delete(std::string_view key) {
  if (absl::Status a = impl_->aborted(); !a.ok()) return a;
  pb::KeyDeleteRequest req;
  req.set_key(std::string(key));
  pb::KeyDeleteResponse resp;
  Impl::Call call(impl_.get(), After(absl::Seconds(30)));
  return impl_->Result(impl_->stub_->KeyDelete(&call.ctx, req, &resp),
                       absl::StrCat("delete '", std::string(key), "'"));
}

}  // namespace podscope::job
