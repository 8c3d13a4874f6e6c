// The coordination service hosted by rank 0: registration, the key-value
// store, barriers, heartbeats with clock probes, the dead-rank watch and
// the shutdown barrier (proto/podscope/job/coordination_service.proto).

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "podscope/base/mutex_checks.h"
#include "podscope/base/net.h"
#include "podscope/job/coordination.h"
#include "podscope/job/coordination_service.grpc.pb.h"
#include "podscope/job/keys.h"
#include "podscope/job/profilers.h"
#include "podscope/profiler/bearer_token.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/grpc_credentials.h"
#include "podscope/profiler/grpc_status.h"
#include "src/doctor_wire.h"
#include "src/key_rules.h"
#include "src/key_value_table.h"
#include "src/rank_credential.h"

namespace podscope::job {
namespace {

namespace pb = ::podscope::job::coordination;
using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
using SteadyClock = std::chrono::steady_clock;

// The longest capture a coordinator relays (a window of steps waits this
// long at most).
constexpr int64_t kMaxRelayDurationMs = int64_t{24} * 3600 * 1000;

std::string Ranks(const std::vector<int>& ranks) {
  return absl::StrJoin(ranks, ", ");
}

struct Member {
  std::string host;
  int64_t pid = 0;
  uint64_t incarnation = 0;
  std::string secret;  // the rank's credential (RegisterResponse)
  SteadyClock::time_point last_heartbeat;
  bool leaving = false;            // entered the shutdown barrier
  std::optional<RankState> state;  // the job doctor's, from its heartbeats
  uint64_t verdicts_told = 0;      // the last verdict serial it was told
};

// A barrier some rank waits in. Waiters hold it, so that it can leave the
// table the moment it completes.
struct BarrierState {
  std::set<int> arrived;
  bool done = false;
};

std::string NewSecret() {
  std::random_device random;
  std::string secret;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&secret, absl::Hex(random(), absl::kZeroPad8));
  }
  return secret;
}

std::string_view Metadata(const ServerContext& ctx, std::string_view name) {
  const auto& md = ctx.client_metadata();
  auto it = md.find(grpc::string_ref(name.data(), name.size()));
  if (it == md.end()) return {};
  return std::string_view(it->second.data(), it->second.size());
}

Status Exhausted(std::string what) {
  return Status(StatusCode::RESOURCE_EXHAUSTED, std::move(what));
}

class Service final : public pb::CoordinationService::Service {
 public:
  explicit Service(const CoordinatorOptions& options)
      : options_(options), members_(options.world_size), kv_(options.limits) {
    watcher_ = std::thread([this] { Watch(); });
  }
  ~Service() override { Stop(); }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    if (watcher_.joinable()) watcher_.join();
  }

  absl::Status job_status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return job_error_;
  }

  int registered() const {
    std::lock_guard<std::mutex> lock(mu_);
    return registered_;
  }

  Status Register(ServerContext* ctx, const pb::RegisterRequest* req,
                  pb::RegisterResponse* resp) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    const int n = options_.world_size;
    const int rank = req->rank();
    if (req->world_size() != n) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("rank ", rank, " (host ", req->host(),
                                 ") says the world size is ", req->world_size(),
                                 ", but the job's coordinator has ", n,
                                 " ranks: every process must be started with "
                                 "the same world size"));
    }
    if (rank < 0 || rank >= n) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("rank ", rank, " (host ", req->host(),
                                 ") is outside the job's ranks 0..", n - 1));
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (!job_error_.ok()) return profiler::ToGrpcStatus(job_error_);
    std::optional<Member>& slot = members_[rank];
    if (slot && slot->incarnation != req->incarnation()) {
      return Status(
          StatusCode::ALREADY_EXISTS,
          absl::StrCat("rank ", rank, " is already registered by host ",
                       slot->host, " pid ", slot->pid,
                       "; a second process claiming rank ", rank, " (host ",
                       req->host(), " pid ", req->pid(), ") was refused"));
    }
    if (!slot) {
      slot = Member{
          req->host(),        req->pid(), req->incarnation(), NewSecret(),
          SteadyClock::now(), false,      std::nullopt,       0};
      ++registered_;
      cv_.notify_all();
    }
    const std::string secret = slot->secret;
    const auto deadline = Deadline(ctx, req->timeout_ms());
    while (registered_ < n && job_error_.ok() && !stopping_) {
      if (WaitSlice(lock, deadline, ctx)) {
        std::vector<int> missing;
        for (int r = 0; r < n; ++r) {
          if (!members_[r]) missing.push_back(r);
        }
        return Status(
            StatusCode::DEADLINE_EXCEEDED,
            absl::StrCat("registration timed out: rank(s) ", Ranks(missing),
                         " of ", n, " never registered"));
      }
    }
    if (!job_error_.ok()) return profiler::ToGrpcStatus(job_error_);
    if (stopping_) return Stopped();
    if (!started_) {
      // Every rank is in: the dead-rank watch starts from now.
      started_ = true;
      for (auto& m : members_) m->last_heartbeat = SteadyClock::now();
    }
    for (const auto& m : members_) resp->add_hosts(m->host);
    resp->set_rank_secret(secret);
    resp->set_heartbeat_interval_ms(
        absl::ToInt64Milliseconds(options_.heartbeat_interval));
    resp->set_dead_after_ms(absl::ToInt64Milliseconds(options_.dead_after));
    return Status::OK;
  }

  Status Heartbeat(ServerContext* ctx, const pb::HeartbeatRequest* req,
                   pb::HeartbeatResponse* resp) override {
    const int64_t received = profiler::ProfilerNowNs();
    if (Status s = Authorize(ctx); !s.ok()) return s;
    std::optional<RankState> state;
    if (req->has_state()) {
      absl::StatusOr<RankState> parsed = internal::FromProto(req->state());
      if (!parsed.ok()) {
        return Status(StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("heartbeat from rank ", req->rank(), ": ",
                                   parsed.status().message()));
      }
      state = *std::move(parsed);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int rank = req->rank();
      if (rank < 0 || rank >= options_.world_size || !members_[rank] ||
          members_[rank]->incarnation != req->incarnation()) {
        return Status(StatusCode::FAILED_PRECONDITION,
                      absl::StrCat("heartbeat from rank ", rank,
                                   ", which is not registered in this job"));
      }
      if (Status s = RequireRank(*ctx, rank, "heartbeat"); !s.ok()) return s;
      members_[rank]->last_heartbeat = SteadyClock::now();
      if (state.has_value()) members_[rank]->state = std::move(state);
      if (!job_error_.ok()) {
        resp->set_job_error_code(static_cast<int>(job_error_.code()));
        resp->set_job_error(std::string(job_error_.message()));
      }
      // A verdict that ended before this rank's heartbeat is still told
      // once: every rank writes its journal for every verdict.
      Member& m = *members_[rank];
      const Verdict* tell = verdict_.kind != VerdictKind::kHealthy ? &verdict_
                            : m.verdicts_told < verdict_serial_ ? &last_verdict_
                                                                : nullptr;
      if (tell != nullptr) {
        resp->set_verdict_kind(static_cast<int>(tell->kind));
        resp->set_verdict(tell->sentence);
        resp->set_verdict_key(tell->key());
        resp->set_verdict_rank(tell->rank);
        resp->set_verdict_group(tell->group);
        resp->set_verdict_sequence(tell->sequence);
        m.verdicts_told = verdict_serial_;
      }
    }
    resp->set_server_receive_ns(received);
    resp->set_server_send_ns(profiler::ProfilerNowNs());
    return Status::OK;
  }

  Status KeySet(ServerContext* ctx, const pb::KeySetRequest* req,
                pb::KeySetResponse*) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    if (Status s = CheckKeySize(req->key()); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    const int rank = CallerRank(*ctx);
    if (rank < 0) return NotARank("set key '" + req->key() + "'");
    if (absl::Status s = internal::CheckKeyWriter(rank, req->key()); !s.ok()) {
      return profiler::ToGrpcStatus(s);
    }
    if (absl::Status s = kv_.Set(req->key(), req->value()); !s.ok()) {
      return profiler::ToGrpcStatus(s);
    }
    cv_.notify_all();
    return Status::OK;
  }

  Status KeyGet(ServerContext* ctx, const pb::KeyGetRequest* req,
                pb::KeyGetResponse* resp) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    if (Status s = CheckKeySize(req->key()); !s.ok()) return s;
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline = Deadline(ctx, req->wait_ms());
    while (true) {
      if (const std::string* value = kv_.Find(req->key())) {
        resp->set_value(*value);
        return Status::OK;
      }
      if (req->wait_ms() <= 0) {
        return Status(StatusCode::NOT_FOUND,
                      absl::StrCat("key '", req->key(), "' is not set"));
      }
      if (!job_error_.ok()) return profiler::ToGrpcStatus(job_error_);
      if (stopping_) return Stopped();
      if (WaitSlice(lock, deadline, ctx)) {
        return Status(StatusCode::DEADLINE_EXCEEDED,
                      absl::StrCat("key '", req->key(), "' was not set within ",
                                   req->wait_ms(), " ms"));
      }
    }
  }

  Status KeyDirectory(ServerContext* ctx, const pb::KeyDirectoryRequest* req,
                      pb::KeyDirectoryResponse* resp) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    if (Status s = CheckKeySize(req->prefix()); !s.ok()) return s;
    if (Status s = CheckKeySize(req->page_after()); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    kv_.Page(req->prefix(), req->page_after(), req->page_size(), resp);
    return Status::OK;
  }

  Status KeyDelete(ServerContext* ctx, const pb::KeyDeleteRequest* req,
                   pb::KeyDeleteResponse*) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    if (Status s = CheckKeySize(req->key()); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    const int rank = CallerRank(*ctx);
    if (rank < 0) return NotARank("delete key '" + req->key() + "'");
    if (absl::Status s = internal::CheckKeyWriter(rank, req->key()); !s.ok()) {
      return profiler::ToGrpcStatus(s);
    }
    kv_.Delete(req->key());
    return Status::OK;
  }

  Status Barrier(ServerContext* ctx, const pb::BarrierRequest* req,
                 pb::BarrierResponse*) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    return Wait(ctx, req->name(), req->rank(), req->timeout_ms(),
                /*leaving=*/false);
  }

  Status Shutdown(ServerContext* ctx, const pb::ShutdownRequest* req,
                  pb::ShutdownResponse*) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    return Wait(ctx, kShutdownBarrier, req->rank(), req->timeout_ms(),
                /*leaving=*/true);
  }

  // `podscope capture --job`, relayed: every rank's profiler server is
  // asked for a worker-side capture that starts at one instant on the job
  // clock (this process's), from here; the client makes this one call.
  Status CaptureRanks(
      ServerContext* ctx, const pb::CaptureRanksRequest* req,
      grpc::ServerWriter<pb::CaptureRanksReply>* writer) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    if (Status s = CheckRelayRequest(*req); !s.ok()) return s;
    profiler::CaptureOptions o;
    o.session = req->session();
    o.duration_ms = req->duration_ms();
    o.level = req->level();
    o.sampling_hz = req->sampling_hz();
    o.by_steps = req->by_steps();
    o.first_step = req->first_step();
    o.last_step = req->last_step();
    o.start_lead_ms = req->start_lead_ms();
    o.start_on_job_clock = true;
    if (absl::Status s = profiler::CheckRelayOptions(o); !s.ok()) {
      return profiler::ToGrpcStatus(s);
    }
    std::vector<JobProfiler> ranks = PublishedProfilers();
    if (ranks.empty()) {
      return Status(StatusCode::NOT_FOUND,
                    "no rank of this job published a profiler server");
    }
    for (const JobProfiler& r : ranks) {
      o.workers.push_back(r.address);
      o.ranks.push_back(r.rank);
    }
    // The ranks serve their profilers with the job's token.
    o.connect.token = options_.token;
    o.connect.tls_ca_file = options_.tls.ca_file;
    o.connect.tls_server_name = options_.tls.server_name;
    auto relay = std::make_shared<Relay>();
    relay->session = o.session;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (relay_ != nullptr) {
        return Status(StatusCode::ALREADY_EXISTS,
                      absl::StrCat("this coordinator is relaying capture '",
                                   relay_->session, "' already"));
      }
      relay_ = relay;
    }
    struct Done {
      Service* service;
      ~Done() {
        std::lock_guard<std::mutex> lock(service->mu_);
        service->relay_.reset();
      }
    } done{this};
    // Every rank writes its own file, or none is asked to record.
    if (Status s = CheckEveryRankWrites(o); !s.ok()) return s;
    o.cancel = &relay->cancel;
    std::mutex write_mutex;
    o.progress = [&](const profiler::CaptureProgress& p) {
      if (ctx->IsCancelled()) relay->cancel = true;
      pb::CaptureRanksReply reply;
      reply.set_workers(p.workers);
      reply.set_streaming(p.streaming);
      reply.set_finished(p.finished);
      reply.set_failed(p.failed);
      reply.set_bytes(p.bytes);
      reply.set_events(p.events);
      std::lock_guard<std::mutex> lock(write_mutex);
      (void)writer->Write(reply);
    };
    const std::vector<profiler::WorkerResult> results =
        profiler::RelayWorkerCaptures(o);
    pb::CaptureRanksReply last;
    last.set_done(true);
    last.set_workers(static_cast<int>(results.size()));
    for (const profiler::WorkerResult& w : results) {
      pb::RankCapture* r = last.add_ranks();
      r->set_rank(w.rank);
      r->set_address(w.address);
      r->set_ok(w.ok);
      r->set_error(w.error);
      r->set_path(w.path);
      r->set_host(w.host);
      r->set_pid(w.pid);
      r->set_bytes(w.bytes);
      r->set_events(w.events);
      r->set_dropped(w.dropped);
      r->set_crc32(w.crc32);
      r->set_window_start_ns(w.window_start_ns);
      r->set_window_end_ns(w.window_end_ns);
      r->set_start_at_job_ns(w.start_at_ns);
      r->set_job_clock(w.job_clock);
      r->set_received_bytes(w.received_bytes);
      r->set_reached(!w.protocol.empty());
      last.set_finished(last.finished() + 1);
      last.set_failed(last.failed() + (w.ok ? 0 : 1));
      last.set_events(last.events() + w.events);
      last.set_bytes(last.bytes() + w.bytes);
    }
    std::lock_guard<std::mutex> lock(write_mutex);
    if (!writer->Write(last)) {
      return Status(StatusCode::CANCELLED, "the client went away");
    }
    return Status::OK;
  }

  Status StopRankCapture(ServerContext* ctx,
                         const pb::StopRankCaptureRequest* req,
                         pb::StopRankCaptureResponse*) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (relay_ == nullptr || relay_->session != req->session()) {
      return Status(StatusCode::NOT_FOUND,
                    "no relayed capture of that session runs here");
    }
    relay_->cancel = true;
    return Status::OK;
  }

  Status JobState(ServerContext* ctx, const pb::JobStateRequest*,
                  pb::JobStateResponse* resp) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = SteadyClock::now();
    resp->set_now_ns(profiler::ProfilerNowNs());
    for (int r = 0; r < options_.world_size; ++r) {
      pb::RankView* view = resp->add_ranks();
      view->set_rank(r);
      const std::optional<Member>& m = members_[r];
      if (!m) continue;
      view->set_registered(true);
      view->set_host(m->host);
      view->set_pid(m->pid);
      view->set_heartbeat_age_ms(
          std::chrono::duration_cast<std::chrono::milliseconds>(
              now - m->last_heartbeat)
              .count());
      view->set_leaving(m->leaving);
      if (m->state.has_value()) {
        internal::ToProto(*m->state, view->mutable_state());
      }
    }
    if (verdict_.kind != VerdictKind::kHealthy) {
      resp->set_verdict_kind(static_cast<int>(verdict_.kind));
      resp->set_verdict(verdict_.sentence);
    }
    if (!job_error_.ok()) {
      resp->set_job_error_code(static_cast<int>(job_error_.code()));
      resp->set_job_error(std::string(job_error_.message()));
    }
    return Status::OK;
  }

  Verdict verdict() const {
    std::lock_guard<std::mutex> lock(mu_);
    return verdict_;
  }

 private:
  static Status Stopped() {
    return Status(StatusCode::UNAVAILABLE, "the coordinator is shutting down");
  }

  SteadyClock::time_point Deadline(ServerContext* ctx, int64_t timeout_ms) {
    auto deadline = SteadyClock::now() +
                    std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0));
    const auto client = ctx->deadline();
    if (client != std::chrono::system_clock::time_point::max()) {
      const auto left = client - std::chrono::system_clock::now();
      deadline =
          std::min(deadline,
                   SteadyClock::now() +
                       std::chrono::duration_cast<SteadyClock::duration>(left));
    }
    return deadline;
  }

  // Waits up to 100 ms; true when `deadline` passed or the client left.
  bool WaitSlice(std::unique_lock<std::mutex>& lock,
                 SteadyClock::time_point deadline, ServerContext* ctx) {
    if (SteadyClock::now() >= deadline || ctx->IsCancelled()) return true;
    cv_.wait_until(
        lock, std::min(deadline,
                       SteadyClock::now() + std::chrono::milliseconds(100)));
    return false;
  }

  Status Wait(ServerContext* ctx, const std::string& name, int rank,
              int64_t timeout_ms, bool leaving) {
    const int n = options_.world_size;
    if (rank < 0 || rank >= n) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("barrier '", name, "': rank ", rank,
                                 " is outside the job's ranks 0..", n - 1));
    }
    if (Status s = CheckKeySize(name); !s.ok()) return s;
    std::unique_lock<std::mutex> lock(mu_);
    if (Status s =
            RequireRank(*ctx, rank, absl::StrCat("barrier '", name, "'"));
        !s.ok()) {
      return s;
    }
    if (!job_error_.ok()) return profiler::ToGrpcStatus(job_error_);
    if (leaving && members_[rank]) members_[rank]->leaving = true;
    std::shared_ptr<BarrierState>& slot = barriers_[name];
    if (slot == nullptr) {
      if (barriers_.size() > options_.limits.max_open_barriers) {
        barriers_.erase(name);
        return Exhausted(absl::StrCat(
            "barrier '", name, "': ", options_.limits.max_open_barriers,
            " barriers are already open in this job, its limit"));
      }
      slot = std::make_shared<BarrierState>();
    }
    const std::shared_ptr<BarrierState> b = slot;
    b->arrived.insert(rank);
    if (static_cast<int>(b->arrived.size()) == n) {
      b->done = true;
      barriers_.erase(name);
      cv_.notify_all();
      return Status::OK;
    }
    const auto deadline = Deadline(ctx, timeout_ms);
    while (!b->done) {
      if (!job_error_.ok()) return profiler::ToGrpcStatus(job_error_);
      if (stopping_) return Stopped();
      if (WaitSlice(lock, deadline, ctx)) {
        if (b->done) break;
        // The rank stays counted as arrived: the missing ranks named are
        // those that never came, and calling again waits on.
        std::vector<int> missing;
        for (int r = 0; r < n; ++r) {
          if (!b->arrived.count(r) && r != rank) missing.push_back(r);
        }
        return Status(
            StatusCode::DEADLINE_EXCEEDED,
            absl::StrCat("barrier '", name, "' timed out after ", timeout_ms,
                         " ms on rank ", rank, ": rank(s) ", Ranks(missing),
                         " did not arrive"));
      }
    }
    return Status::OK;
  }

  Status CheckKeySize(const std::string& key) const {
    if (key.size() <= options_.limits.max_key_bytes) return Status::OK;
    return Exhausted(absl::StrCat(
        "a key of ", key.size(), " bytes; the store's limit is ",
        options_.limits.max_key_bytes, " bytes a key (and a barrier name)"));
  }

  // The registered rank whose credential the call carries, or -1.
  int CallerRank(const ServerContext& ctx) const {
    const std::string_view rank_text = Metadata(ctx, internal::kRankMetadata);
    int rank = -1;
    if (rank_text.empty() || rank_text.size() > 9 ||
        !absl::SimpleAtoi(std::string(rank_text), &rank) || rank < 0 ||
        rank >= options_.world_size || !members_[rank] ||
        !profiler::SameSecret(Metadata(ctx, internal::kSecretMetadata),
                              members_[rank]->secret)) {
      return -1;
    }
    return rank;
  }

  static Status NotARank(const std::string& what) {
    return Status(StatusCode::PERMISSION_DENIED,
                  absl::StrCat(what,
                               ": only a registered rank of the job may "
                               "(the call carried no valid rank credential)"));
  }

  // The call must carry rank `rank`'s credential.
  Status RequireRank(const ServerContext& ctx, int rank,
                     const std::string& what) const {
    const int caller = CallerRank(ctx);
    if (caller < 0) return NotARank(what);
    if (caller != rank) {
      return Status(
          StatusCode::PERMISSION_DENIED,
          absl::StrCat(what, ": rank ", caller, " may not act as rank ", rank));
    }
    return Status::OK;
  }

  // Marks silent ranks dead, and judges stalls and desyncs.
  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (!started_ || !job_error_.ok()) continue;
      const auto now = SteadyClock::now();
      const auto limit = absl::ToChronoMilliseconds(options_.dead_after);
      for (int r = 0; r < options_.world_size; ++r) {
        const std::optional<Member>& m = members_[r];
        if (!m || m->leaving || now - m->last_heartbeat <= limit) continue;
        const double silent =
            std::chrono::duration<double>(now - m->last_heartbeat).count();
        std::string last;
        if (m->state.has_value()) {
          last = LastCollectiveClause(*m->state, profiler::ProfilerNowNs());
        }
        job_error_ = absl::AbortedError(absl::StrFormat(
            "rank %d (host %s, pid %d) is dead or hung: no heartbeat for "
            "%.1f s%s",
            r, m->host, m->pid, silent,
            last.empty() ? ""
                         : absl::StrCat(" (last collective: ", last, ")")));
        verdict_ = {VerdictKind::kDead, r, "", -1,
                    std::string(job_error_.message())};
        cv_.notify_all();
        break;
      }
      if (job_error_.ok()) Judge();
      if (verdict_.kind != VerdictKind::kHealthy) {
        if (verdict_.key() != last_verdict_.key()) ++verdict_serial_;
        last_verdict_ = verdict_;
      }
      Announce(lock);
    }
  }

  // Tells CoordinatorOptions::on_verdict of a new verdict, of one that
  // stands again every 10 s, and of its end.
  void Announce(std::unique_lock<std::mutex>& lock) {
    if (!options_.on_verdict) return;
    const std::string key =
        verdict_.kind == VerdictKind::kHealthy ? "" : verdict_.key();
    const auto now = SteadyClock::now();
    const bool again =
        !key.empty() && now - announced_at_ >= std::chrono::seconds(10);
    if (key == announced_key_ && !again) return;
    announced_key_ = key;
    announced_at_ = now;
    const Verdict verdict = verdict_;
    lock.unlock();
    options_.on_verdict(verdict);
    lock.lock();
  }

  // The doctor's verdict from the ranks' states; with fail_on_stall a
  // stall or desync fails the job. Not while ranks are leaving: a job
  // shutting down waits in no collective.
  void Judge() {
    std::vector<std::optional<RankState>> states;
    for (const std::optional<Member>& m : members_) {
      if (!m || m->leaving) {
        verdict_ = {};
        return;
      }
      states.push_back(m->state);
    }
    verdict_ = JudgeJob(states, profiler::ProfilerNowNs(), options_.stall);
    if (verdict_.kind != VerdictKind::kHealthy && options_.fail_on_stall) {
      job_error_ = absl::AbortedError(
          absl::StrCat("the job doctor failed the job (--on_stall fail): ",
                       verdict_.sentence));
      cv_.notify_all();
    }
  }

  // A relayed capture in progress (one at a time).
  struct Relay {
    std::string session;
    std::atomic<bool> cancel{false};
  };

  // What only a relay's request bounds; the rest of it is the capture's
  // own (profiler::CheckRelayOptions).
  static Status CheckRelayRequest(const pb::CaptureRanksRequest& r) {
    auto bad = [](const std::string& why) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("CaptureRanks: ", why));
    };
    if (r.duration_ms() > kMaxRelayDurationMs) {
      return bad(absl::StrCat("duration_ms must be 1..", kMaxRelayDurationMs));
    }
    if (r.level() < 0 || r.level() > 3) return bad("level must be 0..3");
    if (r.sampling_hz() < 0 || r.sampling_hz() > 10'000) {
      return bad("sampling_hz must be 0..10000");
    }
    if (r.client().size() > 256) return bad("client is over 256 bytes");
    return Status::OK;
  }

  // Every rank's published profiler server, by rank.
  std::vector<JobProfiler> PublishedProfilers() {
    std::vector<JobProfiler> out;
    std::lock_guard<std::mutex> lock(mu_);
    std::string after;
    while (true) {
      pb::KeyDirectoryResponse page;
      kv_.Page(kProfilerKeyPrefix, after, 0, &page);
      for (const pb::KeyValue& kv : page.entries()) {
        if (auto p = ParseJobProfiler(kv.key(), kv.value())) {
          out.push_back(*std::move(p));
        }
      }
      if (!page.more() || page.entries().empty()) break;
      after = page.entries().rbegin()->key();
    }
    std::sort(out.begin(), out.end(),
              [](const JobProfiler& a, const JobProfiler& b) {
                return a.rank < b.rank;
              });
    return out;
  }

  // FAILED_PRECONDITION naming the ranks (the first few) that cannot write
  // their own file: unreachable, or without a capture root.
  static Status CheckEveryRankWrites(const profiler::CaptureOptions& o) {
    const std::vector<profiler::WorkerProtocol> found =
        profiler::FindWorkerProtocols(o.workers, o.connect);
    std::vector<std::string> cannot;
    for (size_t i = 0; i < found.size(); ++i) {
      const profiler::WorkerProtocol& p = found[i];
      if (p.protocol == "podscope" && p.writes_own_file) continue;
      if (cannot.size() < 8) {
        cannot.push_back(absl::StrCat(
            "rank ", o.ranks[i], " (", p.address,
            "): ", p.protocol.empty() ? p.error : "no capture root"));
      }
      if (cannot.size() == 8) cannot.push_back("...");
    }
    if (cannot.empty()) return Status::OK;
    return Status(StatusCode::FAILED_PRECONDITION,
                  absl::StrCat("not every rank can write its own file: ",
                               absl::StrJoin(cannot, "; ")));
  }

  Status Authorize(ServerContext* ctx) const {
    return profiler::CheckBearerToken(
        *ctx, options_.token,
        "this job's coordinator requires the job token "
        "(authorization: Bearer <token>; PODSCOPE_JOB_TOKEN)",
        "wrong job token for this job's coordinator");
  }

  const CoordinatorOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<Member>> members_;  // guarded by mu_
  int registered_ = 0;
  bool started_ = false;
  bool stopping_ = false;
  absl::Status job_error_;
  internal::KeyValueTable kv_;
  std::map<std::string, std::shared_ptr<BarrierState>> barriers_;
  Verdict verdict_;  // guarded by mu_
  // The last verdict that was not healthy, and how many there have been.
  Verdict last_verdict_;         // guarded by mu_
  uint64_t verdict_serial_ = 0;  // guarded by mu_
  // Watcher thread only: the verdict last announced, and when.
  std::string announced_key_;
  SteadyClock::time_point announced_at_;
  std::thread watcher_;
  std::shared_ptr<Relay> relay_;  // guarded by mu_
};

class CoordinatorImpl final : public Coordinator {
 public:
  CoordinatorImpl(std::unique_ptr<Service> service,
                  std::unique_ptr<grpc::Server> server, int port)
      : service_(std::move(service)), server_(std::move(server)), port_(port) {}
  ~CoordinatorImpl() override { Stop(); }

  int port() const override { return port_; }
  std::string address() const override {
    return absl::StrCat("127.0.0.1:", port_);
  }
  absl::Status job_status() const override { return service_->job_status(); }
  int registered_ranks() const override { return service_->registered(); }
  Verdict verdict() const override { return service_->verdict(); }
  void Stop() override {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    service_->Stop();
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(1));
    server_->Wait();
  }

 private:
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  const int port_;
  std::mutex stop_mu_;
  bool stopped_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> StartCoordinator(
    const CoordinatorOptions& options) {
  base::TurnOffMutexDeadlockDetection();
  if (options.world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "coordinator: world size must be >= 1, got ", options.world_size));
  }
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinator: port ", options.port, " is not 0..65535"));
  }
  if (!base::IsLoopbackHost(options.bind_host) && options.token.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("coordinator: listening on ", options.bind_host,
                     " lets other hosts join the job; it needs a job token "
                     "(PODSCOPE_JOB_TOKEN; `podscope launch` makes one)"));
  }
  const bool tls = !options.tls.cert_file.empty();
  if (!base::IsLoopbackHost(options.bind_host) && !tls &&
      !options.tls.insecure) {
    return absl::FailedPreconditionError(absl::StrCat(
        "coordinator: listening on ", options.bind_host,
        " without TLS would send the job token in clear; give it a "
        "certificate (PODSCOPE_JOB_TLS_CERT and PODSCOPE_JOB_TLS_KEY; clients "
        "trust it with PODSCOPE_JOB_TLS_CA), or on a trusted network say so "
        "(PODSCOPE_JOB_INSECURE=1, `podscope launch --insecure`)"));
  }
  auto creds = profiler::ServerCredentialsFromFiles(options.tls.cert_file,
                                                    options.tls.key_file);
  if (!creds.ok()) {
    return absl::Status(
        creds.status().code(),
        absl::StrCat("coordinator: ", creds.status().message()));
  }
  const std::string listen =
      base::JoinHostPort(options.bind_host, options.port);
  auto service = std::make_unique<Service>(options);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(listen, *creds, &bound);
  builder.RegisterService(service.get());
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // A request is at most a key and a value.
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<size_t>(options.limits.max_key_bytes +
                           options.limits.max_value_bytes + (size_t{64} << 10),
                       size_t{1} << 30)));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound == 0) {
    service->Stop();
    return absl::UnavailableError(
        absl::StrCat("coordinator: cannot listen on ", listen,
                     " (port in use, or no such local address)"));
  }
  return std::unique_ptr<Coordinator>(
      new CoordinatorImpl(std::move(service), std::move(server), bound));
}

}  // namespace podscope::job
