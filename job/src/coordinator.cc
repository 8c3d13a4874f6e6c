// The coordination service hosted by rank 0: registration, the key-value
// store, barriers, heartbeats with clock probes, the dead-rank watch and
// the shutdown barrier (proto/podscope/job/coordination_service.proto).

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "podscope/base/net.h"
#include "podscope/job/coordination.h"
#include "podscope/job/coordination_service.grpc.pb.h"
#include "podscope/job/keys.h"
#include "podscope/profiler/bearer_token.h"
#include "podscope/profiler/clock.h"

namespace podscope::job {
namespace {

namespace pb = ::podscope::job::coordination;
using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
using SteadyClock = std::chrono::steady_clock;

Status ToGrpc(const absl::Status& s) {
  return Status(static_cast<StatusCode>(s.code()), std::string(s.message()));
}

std::string Ranks(const std::vector<int>& ranks) {
  return absl::StrJoin(ranks, ", ");
}

struct Member {
  std::string host;
  int64_t pid = 0;
  uint64_t incarnation = 0;
  SteadyClock::time_point last_heartbeat;
  bool leaving = false;  // entered the shutdown barrier
};

struct BarrierState {
  std::set<int> arrived;
  uint64_t generation = 0;
};

class Service final : public pb::CoordinationService::Service {
 public:
  explicit Service(const CoordinatorOptions& options)
      : options_(options), members_(options.world_size) {
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
    if (!job_error_.ok()) return ToGrpc(job_error_);
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
      slot = Member{req->host(), req->pid(), req->incarnation(),
                    SteadyClock::now(), false};
      ++registered_;
      cv_.notify_all();
    }
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
    if (!job_error_.ok()) return ToGrpc(job_error_);
    if (stopping_) return Stopped();
    if (!started_) {
      // Every rank is in: the dead-rank watch starts from now.
      started_ = true;
      for (auto& m : members_) m->last_heartbeat = SteadyClock::now();
    }
    for (const auto& m : members_) resp->add_hosts(m->host);
    resp->set_heartbeat_interval_ms(
        absl::ToInt64Milliseconds(options_.heartbeat_interval));
    resp->set_dead_after_ms(absl::ToInt64Milliseconds(options_.dead_after));
    return Status::OK;
  }

  Status Heartbeat(ServerContext* ctx, const pb::HeartbeatRequest* req,
                   pb::HeartbeatResponse* resp) override {
    const int64_t received = profiler::ProfilerNowNs();
    if (Status s = Authorize(ctx); !s.ok()) return s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int rank = req->rank();
      if (rank < 0 || rank >= options_.world_size || !members_[rank] ||
          members_[rank]->incarnation != req->incarnation()) {
        return Status(StatusCode::FAILED_PRECONDITION,
                      absl::StrCat("heartbeat from rank ", rank,
                                   ", which is not registered in this job"));
      }
      members_[rank]->last_heartbeat = SteadyClock::now();
      if (!job_error_.ok()) {
        resp->set_job_error_code(static_cast<int>(job_error_.code()));
        resp->set_job_error(std::string(job_error_.message()));
      }
    }
    resp->set_server_receive_ns(received);
    resp->set_server_send_ns(profiler::ProfilerNowNs());
    return Status::OK;
  }

  Status KeySet(ServerContext* ctx, const pb::KeySetRequest* req,
                pb::KeySetResponse*) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    kv_[req->key()] = req->value();
    cv_.notify_all();
    return Status::OK;
  }

  Status KeyGet(ServerContext* ctx, const pb::KeyGetRequest* req,
                pb::KeyGetResponse* resp) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline = Deadline(ctx, req->wait_ms());
    while (true) {
      auto it = kv_.find(req->key());
      if (it != kv_.end()) {
        resp->set_value(it->second);
        return Status::OK;
      }
      if (req->wait_ms() <= 0) {
        return Status(StatusCode::NOT_FOUND,
                      absl::StrCat("key '", req->key(), "' is not set"));
      }
      if (!job_error_.ok()) return ToGrpc(job_error_);
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
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = kv_.lower_bound(req->prefix());
         it != kv_.end() &&
         it->first.compare(0, req->prefix().size(), req->prefix()) == 0;
         ++it) {
      pb::KeyValue* kv = resp->add_entries();
      kv->set_key(it->first);
      kv->set_value(it->second);
    }
    return Status::OK;
  }

  Status KeyDelete(ServerContext* ctx, const pb::KeyDeleteRequest* req,
                   pb::KeyDeleteResponse*) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    kv_.erase(req->key());
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
    std::unique_lock<std::mutex> lock(mu_);
    if (!job_error_.ok()) return ToGrpc(job_error_);
    if (leaving && members_[rank]) members_[rank]->leaving = true;
    BarrierState& b = barriers_[name];
    const uint64_t generation = b.generation;
    b.arrived.insert(rank);
    if (static_cast<int>(b.arrived.size()) == n) {
      b.arrived.clear();
      ++b.generation;
      cv_.notify_all();
      return Status::OK;
    }
    const auto deadline = Deadline(ctx, timeout_ms);
    while (barriers_[name].generation == generation) {
      if (!job_error_.ok()) return ToGrpc(job_error_);
      if (stopping_) return Stopped();
      if (WaitSlice(lock, deadline, ctx)) {
        BarrierState& now = barriers_[name];
        if (now.generation != generation) break;
        // The rank stays counted as arrived: the missing ranks named are
        // those that never came, and calling again waits on.
        std::vector<int> missing;
        for (int r = 0; r < n; ++r) {
          if (!now.arrived.count(r) && r != rank) missing.push_back(r);
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

  // Marks silent ranks dead.
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
        job_error_ = absl::AbortedError(absl::StrFormat(
            "rank %d (host %s, pid %d) is dead or hung: no heartbeat for "
            "%.1f s",
            r, m->host, m->pid, silent));
        cv_.notify_all();
        break;
      }
    }
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
  std::map<std::string, std::string> kv_;
  std::map<std::string, BarrierState> barriers_;
  std::thread watcher_;
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
  std::string host = options.bind_host;
  if (host.find(':') != std::string::npos && host.front() != '[') {
    host = "[" + host + "]";
  }
  const std::string listen = absl::StrCat(host, ":", options.port);
  auto service = std::make_unique<Service>(options);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(service.get());
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(64 << 20);
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
