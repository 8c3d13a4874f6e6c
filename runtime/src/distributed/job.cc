// Job: registration with the coordinator (hosted here when rank 0), the
// heartbeat thread with its clock probes and dead-peer handling, device
// exchange for global topologies, and the shutdown barrier.

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "distributed/job_topology.h"
#include "podscope/base/net.h"
#include "podscope/base/time.h"
#include "podscope/job/coordination.h"
#include "podscope/job/keys.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/clock_probe.h"
#include "podscope/profiler/clock_sync.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/distributed.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::runtime {
namespace {

using job::ClockProbe;
using job::CoordinationClient;
using job::Coordinator;
using job::CoordinatorOptions;
using job::JobEnvironment;
using job::KeyValueStore;
using job::kPeerFailureExitCode;

// Clock probes kept for the best estimate, and the probes of Init's burst.
constexpr size_t kClockWindow = 3;
constexpr int kBurstProbes = 8;
// On the lean path (rank 0's UDP clock-probe port): probes of Init's burst,
// probes per heartbeat (the one with the smallest round trip counts), and
// how long one waits for its answer.
constexpr int kLeanBurstProbes = 32;
constexpr int kLeanProbesPerBeat = 4;
constexpr int kLeanProbeTimeoutMs = 100;
// Rank 0 publishes its probe port and key under job::job::kClockProbeKey:
// "port keyhex".

std::mutex g_current_mu;
std::weak_ptr<Job> g_current;  // guarded by g_current_mu

using base::EnvMs;

uint64_t RandomIncarnation() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
}

// The local address this host uses to reach `host` (for the address other
// ranks and `podscope capture --job` dial); "127.0.0.1" on failure.
std::string LocalAddressToward(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) !=
          0 ||
      res == nullptr) {
    return "127.0.0.1";
  }
  std::string out = "127.0.0.1";
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)) != nullptr) {
      out = text;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  return out;
}

class JobImpl final : public Job {
 public:
  JobImpl(JobEnvironment env, InitOptions options)
      : env_(std::move(env)),
        options_(std::move(options)),
        incarnation_(RandomIncarnation()) {}

  ~JobImpl() override {
    StopHeartbeats();
    if (profiler_server_) profiler_server_->Stop();
    if (coordinator_) coordinator_->Stop();
  }

  absl::Status Start();

  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }
  const JobEnvironment& environment() const override { return env_; }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  KeyValueStore& store() override { return *client_; }

  absl::Status Barrier(std::string_view name, absl::Duration timeout) override {
    if (absl::Status h = health(); !h.ok()) return h;
    return client_->Barrier(name, env_.rank, timeout);
  }

  absl::Status health() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return health_;
  }

  JobClock clock() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return clock_;
  }

  std::string profiler_address() const override { return published_; }

  absl::Status Shutdown(absl::Duration timeout) override {
    std::lock_guard<std::mutex> lock(shutdown_mu_);
    if (shut_down_) return shutdown_status_;
    shut_down_ = true;
    shutdown_status_ = health();
    if (shutdown_status_.ok()) {
      shutdown_status_ = client_->Shutdown(env_.rank, timeout);
    }
    StopHeartbeats();
    if (profiler_server_) profiler_server_->Stop();
    // The coordinator answers the last ranks' shutdown calls before it
    // stops (Stop waits for calls in flight).
    if (coordinator_) coordinator_->Stop();
    internal::SetJobDevices(std::nullopt);
    return shutdown_status_;
  }

 private:
  void HeartbeatLoop();
  void OnProbe(const ClockProbe& probe);
  // The best of `probes` lean probes, if rank 0's port answers.
  std::optional<ClockProbe> LeanProbe(int probes);
  void Fail(const absl::Status& status);

  void StopHeartbeats() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (heartbeat_.joinable()) heartbeat_.join();
  }

  const JobEnvironment env_;
  const InitOptions options_;
  const uint64_t incarnation_;
  absl::Duration interval_;
  absl::Duration dead_after_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<CoordinationClient> client_;
  std::unique_ptr<profiler::ProfilerServer> profiler_server_;
  std::string published_;  // its address as published, set in Start
  // Rank 0 answers clock probes; the others probe it (heartbeat thread).
  std::unique_ptr<profiler::ClockProbeServer> probe_server_;
  std::unique_ptr<profiler::ClockProbeClient> prober_;
  std::vector<std::string> hosts_;
  std::thread heartbeat_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                // guarded by mu_
  absl::Status health_;              // guarded by mu_
  JobClock clock_;                   // guarded by mu_
  std::deque<ClockProbe> window_;    // heartbeat thread only
  int64_t last_recorded_t1_ = -1;    // heartbeat thread only
  std::optional<ClockProbe> first_;  // heartbeat thread only

  std::mutex shutdown_mu_;
  bool shut_down_ = false;
  absl::Status shutdown_status_;
};

absl::Status JobImpl::Start() {
  interval_ =
      EnvMs("PODSCOPE_HEARTBEAT_INTERVAL_MS", options_.heartbeat_interval);
  dead_after_ = EnvMs("PODSCOPE_DEAD_AFTER_MS", options_.dead_after);
  std::string address = env_.coordinator_address;
  std::string coordinator_host = "127.0.0.1";
  int coordinator_port = 0;
  if (!address.empty()) {
    auto split = base::SplitHostPort(address, "coordinator address");
    if (!split.ok()) return split.status();
    coordinator_host = split->first;
    coordinator_port = split->second;
  } else if (env_.world_size > 1) {
    return absl::InvalidArgumentError(
        "Job::Init: a job of several processes needs a coordinator address");
  }
  const bool loopback = base::IsLoopbackHost(coordinator_host);
  if (env_.rank == 0) {
    CoordinatorOptions c;
    c.bind_host = loopback ? "127.0.0.1" : "0.0.0.0";
    c.port = coordinator_port;
    c.world_size = env_.world_size;
    c.token = env_.job_token;
    c.tls = env_.tls;
    c.heartbeat_interval = interval_;
    c.dead_after = dead_after_;
    auto coordinator = job::StartCoordinator(c);
    if (!coordinator.ok()) {
      return absl::Status(coordinator.status().code(),
                          absl::StrCat("rank 0 cannot host the job's "
                                       "coordinator: ",
                                       coordinator.status().message()));
    }
    coordinator_ = *std::move(coordinator);
    address = coordinator_->address();
  }
  auto client = CoordinationClient::Create(
      address, env_.job_token,
      env_.rank == 0 ? job::LocalClientTls(env_.tls, coordinator_host)
                     : env_.tls);
  if (!client.ok()) return client.status();
  client_ = *std::move(client);

  const std::string host = base::HostName();
  auto registered =
      client_->Register(env_.rank, env_.world_size, host, getpid(),
                        incarnation_, options_.init_timeout);
  if (!registered.ok()) return registered.status();
  hosts_ = registered->hosts;

  // Rank 0's clock is the job's reference: it answers clock probes on a
  // UDP port of its own, published (with its key) in the store that only
  // the job's token opens.
  if (env_.rank == 0 && env_.world_size > 1) {
    auto probes =
        profiler::ClockProbeServer::Start(loopback ? "127.0.0.1" : "0.0.0.0");
    if (probes.ok()) {
      probe_server_ = *std::move(probes);
      (void)client_->Set(
          job::kClockProbeKey,
          absl::StrCat(probe_server_->port(), " ", probe_server_->key_hex()));
    } else {
      std::fprintf(stderr,
                   "podscope: rank 0: clock probes go through the "
                   "coordinator: %s\n",
                   std::string(probes.status().message()).c_str());
    }
  }

  // Devices of every process, for clients that span the job.
  auto client_options = ClientOptions::FromEnvironment();
  if (!client_options.ok()) return client_options.status();
  auto local = LocalTopology(*client_options);
  if (!local.ok()) return local.status();
  const std::string rank_key = absl::StrCat(env_.rank);
  if (absl::Status s =
          client_->Set(absl::StrCat(job::kDevicesKeyPrefix, rank_key),
                       absl::StrCat(local->devices.size()));
      !s.ok()) {
    return s;
  }

  // This rank's profiler server, for `podscope capture --job`.
  const char* want_server = std::getenv("PODSCOPE_JOB_PROFILER");
  if (options_.start_profiler_server &&
      !(want_server != nullptr && std::string(want_server) == "0")) {
    profiler::ServerOptions server_options;
    const char* profiler_token = std::getenv("PODSCOPE_PROFILER_TOKEN");
    const bool have_token =
        profiler_token != nullptr && *profiler_token != '\0';
    // The job's token opens every rank's server (`capture --job` sends
    // it), on loopback too, unless the profiler has a token of its own.
    if (!have_token && !env_.job_token.empty()) {
      server_options.token = env_.job_token;
    }
    if (!loopback && (have_token || !env_.job_token.empty())) {
      server_options.bind_address = "0.0.0.0";
    }
    auto server = profiler::StartServer(options_.profiler_port, server_options);
    if (server.ok()) {
      profiler_server_ = *std::move(server);
      const std::string ip =
          loopback ? "127.0.0.1"
                   : LocalAddressToward(coordinator_host, coordinator_port);
      const std::string published =
          server_options.bind_address == "0.0.0.0"
              ? absl::StrCat(ip, ":", profiler_server_->port())
              : profiler_server_->address();
      published_ = published;
      (void)client_->Set(absl::StrCat(job::kProfilerKeyPrefix, rank_key),
                         absl::StrCat(published, " ", host, " ", getpid()));
    } else {
      std::fprintf(stderr,
                   "podscope: rank %d: no profiler server for capture --job: "
                   "%s\n",
                   env_.rank, std::string(server.status().message()).c_str());
    }
  }

  if (absl::Status s =
          client_->Barrier(job::kInitBarrier, env_.rank, options_.init_timeout);
      !s.ok()) {
    return s;
  }
  auto devices = client_->GetDirectory(job::kDevicesKeyPrefix);
  if (!devices.ok()) return devices.status();
  internal::JobDevices job_devices;
  job_devices.process_index = env_.rank;
  job_devices.devices_per_process.assign(env_.world_size, 0);
  for (const auto& [key, value] : *devices) {
    int r = 0, n = 0;
    if (absl::SimpleAtoi(
            key.substr(std::string_view(job::kDevicesKeyPrefix).size()), &r) &&
        absl::SimpleAtoi(value, &n) && r >= 0 && r < env_.world_size) {
      job_devices.devices_per_process[r] = n;
    }
  }
  internal::SetJobDevices(job_devices);
  profiler::SetProcessInfo(env_.rank, env_.world_size);

  // The first clock estimate: a quick burst of probes.
  if (env_.rank == 0) {
    profiler::RecordReferenceClockOffset(
        {profiler::ProfilerNowNs(), 0, 0, "rank 0"});
    std::lock_guard<std::mutex> lock(mu_);
    clock_ = {true, profiler::ProfilerNowNs(), 0, 0, 0, 1};
  } else {
    if (auto published = client_->Get(job::kClockProbeKey); published.ok()) {
      std::vector<std::string> parts =
          absl::StrSplit(*published, ' ', absl::SkipEmpty());
      int port = 0;
      if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &port)) {
        auto prober = profiler::ClockProbeClient::Connect(coordinator_host,
                                                          port, parts[1]);
        if (prober.ok()) prober_ = *std::move(prober);
      }
    }
    if (std::optional<ClockProbe> lean = LeanProbe(kLeanBurstProbes)) {
      OnProbe(*lean);
    } else {
      prober_.reset();  // rank 0's port is not reachable from here
      for (int i = 0; i < kBurstProbes; ++i) {
        auto beat =
            client_->Heartbeat(env_.rank, incarnation_, absl::Seconds(2),
                               &profiler::ProfilerNowNs);
        if (beat.ok()) OnProbe(beat->probe);
      }
    }
  }
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  return absl::OkStatus();
}

std::optional<ClockProbe> JobImpl::LeanProbe(int probes) {
  if (!prober_) return std::nullopt;
  return prober_->BestOf(probes, kLeanProbeTimeoutMs);
}

void JobImpl::OnProbe(const ClockProbe& probe) {
  if (env_.rank == 0) return;  // rank 0's clock is the reference
  // The best of the last few probes: short enough that a new measurement
  // is recorded every few heartbeats, so the offsets follow drift.
  window_.push_back(probe);
  if (window_.size() > kClockWindow) window_.pop_front();
  const ClockProbe* best = &window_.front();
  for (const ClockProbe& p : window_) {
    if (p.round_trip_ns() < best->round_trip_ns()) best = &p;
  }
  if (best->t1 == last_recorded_t1_) return;
  last_recorded_t1_ = best->t1;
  const int64_t uncertainty = std::max<int64_t>(best->round_trip_ns() / 2, 1);
  profiler::RecordReferenceClockOffset(
      {best->local_ns(), best->offset_ns(), uncertainty, "rank 0"});
  if (!first_) first_ = *best;
  std::lock_guard<std::mutex> lock(mu_);
  clock_.valid = true;
  clock_.local_ns = best->local_ns();
  clock_.offset_ns = best->offset_ns();
  clock_.uncertainty_ns = uncertainty;
  clock_.probes += 1;
  const int64_t span = best->local_ns() - first_->local_ns();
  if (span > 0) {
    // A slope within its own uncertainty is noise (the first probes come
    // in a burst microseconds apart): report no drift until the probes
    // resolve one, as the trace's ClockModel does.
    const double slope =
        static_cast<double>(best->offset_ns() - first_->offset_ns()) /
        static_cast<double>(span);
    const double resolution =
        static_cast<double>(uncertainty + first_->round_trip_ns() / 2) /
        static_cast<double>(span);
    clock_.drift_ppm = std::abs(slope) > resolution ? -1e6 * slope : 0;
  }
}

void JobImpl::HeartbeatLoop() {
  auto last_ok = std::chrono::steady_clock::now();
  const auto period = absl::ToChronoMilliseconds(interval_);
  const auto limit = absl::ToChronoMilliseconds(dead_after_);
  const absl::Duration rpc_timeout =
      std::clamp(interval_, absl::Milliseconds(200), absl::Seconds(2));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    auto beat = client_->Heartbeat(env_.rank, incarnation_, rpc_timeout,
                                   &profiler::ProfilerNowNs);
    const auto now = std::chrono::steady_clock::now();
    if (beat.ok()) {
      last_ok = now;
      // The heartbeat's own probe crossed gRPC's thread pools; the lean
      // path's, when rank 0 answers it, are tighter.
      std::optional<ClockProbe> lean = LeanProbe(kLeanProbesPerBeat);
      OnProbe(lean ? *lean : beat->probe);
      if (!beat->job_status.ok()) {
        Fail(beat->job_status);
        return;
      }
    } else if (beat.status().code() == absl::StatusCode::kFailedPrecondition) {
      Fail(absl::AbortedError(
          absl::StrCat("the coordinator no longer knows rank ", env_.rank, ": ",
                       beat.status().message())));
      return;
    } else if (now - last_ok > limit) {
      Fail(absl::UnavailableError(absl::StrCat(
          "rank 0 (host ", hosts_.empty() ? "?" : hosts_[0],
          ", the job's coordinator) is dead or hung: no heartbeat answered "
          "for ",
          absl::FormatDuration(absl::FromChrono(now - last_ok)), " (",
          beat.status().message(), ")")));
      return;
    }
    lock.lock();
  }
}

void JobImpl::Fail(const absl::Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!health_.ok()) return;
    health_ = status;
  }
  client_->Abort(status);
  if (options_.on_peer_failure) options_.on_peer_failure(status);
  if (!options_.exit_on_peer_failure) return;
  std::fprintf(stderr,
               "podscope: rank %d (host %s): the job failed: %s; exiting with "
               "status %d\n",
               env_.rank, base::HostName().c_str(),
               std::string(status.message()).c_str(), kPeerFailureExitCode);
  std::fflush(stderr);
  // The file of a running trace ends complete.
  if (profiler::IsTracing()) (void)profiler::StopTrace();
  if (coordinator_) {
    // Give the other survivors a heartbeat to learn of the failure before
    // the coordinator goes away with this process.
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(interval_ * 1.5));
  }
  std::fflush(stdout);
  std::_Exit(kPeerFailureExitCode);
}

}  // namespace

absl::StatusOr<std::shared_ptr<Job>> Job::Init(const InitOptions& options) {
  {
    std::lock_guard<std::mutex> lock(g_current_mu);
    if (g_current.lock() != nullptr) {
      return absl::FailedPreconditionError(
          "Job::Init: this process has already joined a job");
    }
  }
  JobEnvironment env;
  if (options.environment) {
    env = *options.environment;
  } else {
    auto discovered = job::DiscoverJobEnvironment();
    if (!discovered.ok()) return discovered.status();
    env = *discovered;
  }
  if (env.world_size < 1 || env.rank < 0 || env.rank >= env.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Job::Init: rank ", env.rank, " is outside a job of ", env.world_size));
  }
  auto job = std::make_shared<JobImpl>(env, options);
  if (absl::Status s = job->Start(); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(g_current_mu);
  g_current = job;
  return std::shared_ptr<Job>(job);
}

std::shared_ptr<Job> Job::Current() {
  std::lock_guard<std::mutex> lock(g_current_mu);
  return g_current.lock();
}

}  // namespace podscope::runtime
