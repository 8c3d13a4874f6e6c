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
#include "collectives/journal.h"
#include "distributed/doctor_dump.h"
#include "distributed/job_topology.h"
#include "podscope/base/clock_fit.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"
#include "podscope/base/time.h"
#include "podscope/job/coordination.h"
#include "podscope/job/keys.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/clock_probe.h"
#include "podscope/profiler/clock_sync.h"
#include "podscope/profiler/flight_recorder.h"
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

// Recorded offsets the job clock's drift and uncertainty are fitted to,
// and the probes of Init's burst through gRPC.
constexpr size_t kClockFitWindow = 64;
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

  job::Verdict doctor_verdict() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return verdict_;
  }

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
  // The steps of Start.
  absl::Status Register();
  void StartClockProbeServer();
  absl::Status PublishDevices();
  void StartProfilerServer();
  absl::Status LearnJobDevices();
  void FirstClockEstimate();

  void HeartbeatLoop();
  void OnProbe(const ClockProbe& probe);
  // The best of `probes` lean probes, if rank 0's port answers.
  std::optional<ClockProbe> LeanProbe(int probes);
  void Fail(const absl::Status& status);
  // Where this rank is, for the job doctor, on the job clock.
  job::RankState DoctorState() const;
  void OnVerdict(const job::HeartbeatResult& beat);
  // Where a rank learns of a stall, desync or dead-rank verdict: it writes
  // its journal into the job's doctor folder (and, later, its recent trace).
  void WriteDoctorDump(const job::Verdict& verdict);

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
  const std::string host_ = base::HostName();
  // Where the coordinator is (set by Register).
  std::string coordinator_host_ = "127.0.0.1";
  int coordinator_port_ = 0;
  bool loopback_ = true;
  absl::Duration interval_;
  absl::Duration dead_after_;
  std::string doctor_dir_;
  // Heartbeat thread only: the verdict last seen.
  std::string reported_key_;
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
  bool stop_ = false;     // guarded by mu_
  absl::Status health_;   // guarded by mu_
  JobClock clock_;        // guarded by mu_
  job::Verdict verdict_;  // guarded by mu_
  // Heartbeat thread only: the offsets recorded (for the job clock's fit).
  std::deque<base::ClockSample> recorded_;

  std::mutex shutdown_mu_;
  bool shut_down_ = false;
  absl::Status shutdown_status_;
};

absl::Status JobImpl::Start() {
  interval_ =
      EnvMs("PODSCOPE_HEARTBEAT_INTERVAL_MS", options_.heartbeat_interval);
  dead_after_ = EnvMs("PODSCOPE_DEAD_AFTER_MS", options_.dead_after);
  doctor_dir_ = options_.doctor_dir;
  if (const char* dir = std::getenv("PODSCOPE_DOCTOR_DIR");
      doctor_dir_.empty() && dir != nullptr) {
    doctor_dir_ = dir;
  }
  // A job's ranks keep the last seconds of their trace in memory when the
  // launcher (or the user) asks for it, so a verdict can dump them.
  if (absl::Status s = profiler::StartFlightRecorderFromEnv(); !s.ok()) {
    std::fprintf(stderr, "podscope: rank %d: %s\n", env_.rank,
                 std::string(s.message()).c_str());
  }
  PODSCOPE_RETURN_IF_ERROR(Register());
  if (env_.rank == 0 && env_.world_size > 1) StartClockProbeServer();
  PODSCOPE_RETURN_IF_ERROR(PublishDevices());
  const char* want_server = std::getenv("PODSCOPE_JOB_PROFILER");
  if (options_.start_profiler_server &&
      !(want_server != nullptr && std::string(want_server) == "0")) {
    StartProfilerServer();
  }
  PODSCOPE_RETURN_IF_ERROR(
      client_->Barrier(job::kInitBarrier, env_.rank, options_.init_timeout));
  PODSCOPE_RETURN_IF_ERROR(LearnJobDevices());
  profiler::SetProcessInfo(env_.rank, env_.world_size);
  FirstClockEstimate();
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  return absl::OkStatus();
}

absl::Status JobImpl::Register() {
  std::string address = env_.coordinator_address;
  if (!address.empty()) {
    PODSCOPE_ASSIGN_OR_RETURN(
        auto split, base::SplitHostPort(address, "coordinator address"));
    coordinator_host_ = split.first;
    coordinator_port_ = split.second;
  } else if (env_.world_size > 1) {
    return absl::InvalidArgumentError(
        "Job::Init: a job of several processes needs a coordinator address");
  }
  loopback_ = base::IsLoopbackHost(coordinator_host_);
  if (env_.rank == 0) {
    CoordinatorOptions c;
    c.bind_host = loopback_ ? "127.0.0.1" : "0.0.0.0";
    c.port = coordinator_port_;
    c.world_size = env_.world_size;
    c.token = env_.job_token;
    c.tls = env_.tls;
    c.heartbeat_interval = interval_;
    c.dead_after = dead_after_;
    c.stall.stall_after =
        EnvMs("PODSCOPE_STALL_AFTER_MS", options_.stall_after);
    // Rank 0 speaks for the job, the moment its coordinator judges.
    c.on_verdict = &internal::PrintVerdict;
    c.fail_on_stall = options_.on_stall == InitOptions::OnStall::kFail;
    if (const char* on_stall = std::getenv("PODSCOPE_ON_STALL")) {
      if (std::string_view(on_stall) == "fail") c.fail_on_stall = true;
      if (std::string_view(on_stall) == "report") c.fail_on_stall = false;
    }
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
  PODSCOPE_ASSIGN_OR_RETURN(
      client_,
      CoordinationClient::Create(
          address, env_.job_token,
          env_.rank == 0 ? job::LocalClientTls(env_.tls, coordinator_host_)
                         : env_.tls));
  PODSCOPE_ASSIGN_OR_RETURN(
      auto registered,
      client_->Register(env_.rank, env_.world_size, host_, getpid(),
                        incarnation_, options_.init_timeout));
  hosts_ = registered.hosts;
  return absl::OkStatus();
}

// Rank 0's clock is the job's reference: it answers clock probes on a UDP
// port of its own, published (with its key) in the store that only the
// job's token opens.
void JobImpl::StartClockProbeServer() {
  auto probes =
      profiler::ClockProbeServer::Start(loopback_ ? "127.0.0.1" : "0.0.0.0");
  if (!probes.ok()) {
    std::fprintf(stderr,
                 "podscope: rank 0: clock probes go through the "
                 "coordinator: %s\n",
                 std::string(probes.status().message()).c_str());
    return;
  }
  probe_server_ = *std::move(probes);
  (void)client_->Set(
      job::kClockProbeKey,
      absl::StrCat(probe_server_->port(), " ", probe_server_->key_hex()));
}

// This process's devices, for clients that span the job.
absl::Status JobImpl::PublishDevices() {
  PODSCOPE_ASSIGN_OR_RETURN(auto client_options,
                            ClientOptions::FromEnvironment());
  PODSCOPE_ASSIGN_OR_RETURN(auto local, LocalTopology(client_options));
  return client_->Set(absl::StrCat(job::kDevicesKeyPrefix, env_.rank),
                      absl::StrCat(local.devices.size()));
}

// This rank's profiler server, for `podscope capture --job`. One that
// cannot start is reported, and the rank runs on without it.
void JobImpl::StartProfilerServer() {
  profiler::ServerOptions server_options;
  const char* profiler_token = std::getenv("PODSCOPE_PROFILER_TOKEN");
  const bool have_token = profiler_token != nullptr && *profiler_token != '\0';
  // The job's token opens every rank's server (`capture --job` sends it),
  // on loopback too, unless the profiler has a token of its own.
  if (!have_token && !env_.job_token.empty()) {
    server_options.token = env_.job_token;
  }
  if (!loopback_ && (have_token || !env_.job_token.empty())) {
    server_options.bind_address = "0.0.0.0";
  }
  auto server = profiler::StartServer(options_.profiler_port, server_options);
  if (!server.ok()) {
    std::fprintf(stderr,
                 "podscope: rank %d: no profiler server for capture --job: "
                 "%s\n",
                 env_.rank, std::string(server.status().message()).c_str());
    return;
  }
  profiler_server_ = *std::move(server);
  const std::string ip =
      loopback_ ? "127.0.0.1"
                : LocalAddressToward(coordinator_host_, coordinator_port_);
  published_ = server_options.bind_address == "0.0.0.0"
                   ? absl::StrCat(ip, ":", profiler_server_->port())
                   : profiler_server_->address();
  (void)client_->Set(absl::StrCat(job::kProfilerKeyPrefix, env_.rank),
                     absl::StrCat(published_, " ", host_, " ", getpid()));
}

// Every rank's device count, once all have published theirs.
absl::Status JobImpl::LearnJobDevices() {
  PODSCOPE_ASSIGN_OR_RETURN(auto devices,
                            client_->GetDirectory(job::kDevicesKeyPrefix));
  internal::JobDevices job_devices;
  job_devices.process_index = env_.rank;
  job_devices.devices_per_process.assign(env_.world_size, 0);
  for (const auto& [key, value] : devices) {
    int r = 0, n = 0;
    if (absl::SimpleAtoi(
            key.substr(std::string_view(job::kDevicesKeyPrefix).size()), &r) &&
        absl::SimpleAtoi(value, &n) && r >= 0 && r < env_.world_size) {
      job_devices.devices_per_process[r] = n;
    }
  }
  internal::SetJobDevices(job_devices);
  return absl::OkStatus();
}

// The first clock estimate: a quick burst of probes.
void JobImpl::FirstClockEstimate() {
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
        auto prober = profiler::ClockProbeClient::Connect(coordinator_host_,
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
}

std::optional<ClockProbe> JobImpl::LeanProbe(int probes) {
  if (!prober_) return std::nullopt;
  return prober_->BestOf(probes, kLeanProbeTimeoutMs);
}

void JobImpl::OnProbe(const ClockProbe& probe) {
  if (env_.rank == 0) {
    // The reference itself, exactly, at every beat: a reader then bounds
    // rank 0's own timestamps by the floor alone, never by a drift bound.
    const int64_t now = profiler::ProfilerNowNs();
    profiler::RecordReferenceClockOffset({now, 0, 0, "rank 0"});
    std::lock_guard<std::mutex> lock(mu_);
    clock_.local_ns = now;
    clock_.probes += 1;
    return;
  }
  const base::ProbeTimes times{probe.t1, probe.t2, probe.t3, probe.t4};
  // A heartbeat's probe whose timestamps cannot be trusted says nothing
  // (the lean path's BestOf already leaves such probes out).
  if (base::CheckProbe(times) != base::ProbeFault::kNone) return;
  // Every beat's best probe is recorded, each as its own interval (a bound
  // at its time): the trace's reader (base::ClockFit) bounds a time by the
  // offsets on each side of it, so they must come often.
  const base::ClockSample sample = base::SampleThisSideLocal(times);
  const int64_t uncertainty =
      std::max(sample.half_width_ns, base::kClockCompareFloorNs);
  profiler::RecordReferenceClockOffset(
      {sample.local_ns, sample.offset_ns, uncertainty, "rank 0"});
  recorded_.push_back(sample);
  if (recorded_.size() > kClockFitWindow) recorded_.pop_front();
  const base::ClockFit fit(
      std::vector<base::ClockSample>(recorded_.begin(), recorded_.end()));
  const base::ClockInterval now = fit.At(sample.local_ns);
  std::lock_guard<std::mutex> lock(mu_);
  clock_.valid = true;
  clock_.local_ns = sample.local_ns;
  clock_.offset_ns = now.offset_ns;
  clock_.uncertainty_ns = now.uncertainty_ns;
  clock_.probes += 1;
  clock_.drift_ppm = fit.DriftPpm();
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
    const job::RankState state = DoctorState();
    auto beat = client_->Heartbeat(env_.rank, incarnation_, rpc_timeout,
                                   &profiler::ProfilerNowNs, &state);
    const auto now = std::chrono::steady_clock::now();
    if (beat.ok()) {
      last_ok = now;
      // The heartbeat's own probe crossed gRPC's thread pools; the lean
      // path's, when rank 0 answers it, are tighter.
      std::optional<ClockProbe> lean = LeanProbe(kLeanProbesPerBeat);
      OnProbe(lean ? *lean : beat->probe);
      OnVerdict(*beat);
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

job::RankState JobImpl::DoctorState() const {
  int64_t offset = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offset = clock_.offset_ns;
  }
  return internal::CollectiveJournal::Get().Snapshot(offset);
}

void JobImpl::OnVerdict(const job::HeartbeatResult& beat) {
  job::Verdict verdict;
  verdict.kind = beat.verdict_kind;
  verdict.sentence = beat.verdict;
  verdict.rank = beat.verdict_rank;
  verdict.group = beat.verdict_group;
  verdict.sequence = beat.verdict_sequence;
  {
    std::lock_guard<std::mutex> lock(mu_);
    verdict_ = verdict;
  }
  if (verdict.kind == job::VerdictKind::kHealthy) {
    reported_key_.clear();
    return;
  }
  const bool fresh = beat.verdict_key != reported_key_;
  if (fresh) WriteDoctorDump(verdict);
  reported_key_ = beat.verdict_key;
  if (fresh && options_.on_doctor_verdict) options_.on_doctor_verdict(verdict);
}

void JobImpl::WriteDoctorDump(const job::Verdict& verdict) {
  if (doctor_dir_.empty()) return;
  int64_t offset = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    offset = clock_.offset_ns;
  }
  internal::WriteJournalFile(doctor_dir_, host_, env_.rank, offset, verdict);
  // The seconds before, beside the journal: the flight recorder's window.
  if (profiler::FlightRecorderRunning()) {
    auto dump = profiler::DumpFlightRecorder(doctor_dir_, verdict.sentence);
    if (!dump.ok()) {
      std::fprintf(stderr,
                   "podscope: rank %d: the flight recorder's dump into %s "
                   "failed: %s\n",
                   env_.rank, doctor_dir_.c_str(),
                   std::string(dump.status().message()).c_str());
    }
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
    PODSCOPE_ASSIGN_OR_RETURN(env, job::DiscoverJobEnvironment());
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
