// Collectives against the job's health (job_watch.h): one thread per
// process polls the job while collectives are in flight and aborts their
// Gloo contexts when it fails.

#include "collectives/job_watch.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gloo/transport/tcp/address.h"
#include "podscope/base/status_macros.h"
#include "podscope/base/time.h"
#include "podscope/runtime/distributed.h"

namespace podscope::runtime::internal {
namespace {

constexpr auto kPollPeriod = std::chrono::milliseconds(100);

using base::EnvMs;

bool SameEndpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

bool AnyIs(const std::vector<sockaddr_storage>& list,
           const sockaddr_storage& a) {
  return std::any_of(list.begin(), list.end(), [&](const sockaddr_storage& b) {
    return SameEndpoint(a, b);
  });
}

// Gloo offers no way to fail what waits on a pair from outside: close()
// leaves its waiters to their timeout. Shutting the pair's socket down
// does it: Gloo's event loop reads the end of the stream and fails every
// send and receive pending on the pair, as when a peer goes away.
void AbortContext(const Communicator::State& state) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, remote{};
    socklen_t local_len = sizeof(local), remote_len = sizeof(remote);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_len) !=
            0) {
      continue;  // not a connected socket
    }
    if (AnyIs(state.pair_listen_addresses, local) ||
        AnyIs(state.peer_listen_addresses, remote)) {
      shutdown(fd, SHUT_RDWR);
    }
  }
  closedir(dir);
}

}  // namespace

// The process's watcher: collectives in flight, and a thread that polls the
// job while there are any.
class JobWatcher {
 public:
  static JobWatcher& Get() {
    static JobWatcher* const watcher = new JobWatcher();
    return *watcher;
  }

  void Add(WatchedCollective* w) {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.push_back(w);
    if (!started_) {
      started_ = true;
      std::thread([this] { Loop(); }).detach();
    }
    cv_.notify_all();
  }

  void Remove(WatchedCollective* w) {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(std::remove(in_flight_.begin(), in_flight_.end(), w),
                     in_flight_.end());
  }

  absl::Status FailureOf(const WatchedCollective& w) {
    std::lock_guard<std::mutex> lock(mu_);
    return w.failure_;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return !in_flight_.empty(); });
      cv_.wait_for(lock, kPollPeriod);
      if (in_flight_.empty()) continue;
      lock.unlock();
      const absl::Status failure = JobFailure();
      lock.lock();
      if (failure.ok()) continue;
      // Removal waits for this lock, so every state here is alive.
      for (WatchedCollective* w : in_flight_) {
        if (!w->failure_.ok()) continue;
        w->failure_ = failure;
        AbortContext(w->state_);
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<WatchedCollective*> in_flight_;  // guarded by mu_
  bool started_ = false;                       // guarded by mu_
};

void RememberPairSockets(Communicator::State& state, const GlooStore& store) {
  if (state.context == nullptr || state.world_size < 2) return;
  for (int r = 0; r < state.world_size; ++r) {
    if (r == state.rank) continue;
    const auto* ours = dynamic_cast<const gloo::transport::tcp::Address*>(
        &state.context->getPair(r)->address());
    if (ours != nullptr)
      state.pair_listen_addresses.push_back(ours->getSockaddr());
    // Rank r published its pairs' addresses, for every rank but itself, in
    // rank order, under its rank.
    const std::vector<char>* all = store.Got(std::to_string(r));
    if (all == nullptr || all->empty()) continue;
    const size_t size = all->size() / (state.world_size - 1);
    const size_t at = (state.rank > r ? state.rank - 1 : state.rank) * size;
    if (size == 0 || at + size > all->size()) continue;
    try {
      const gloo::transport::tcp::Address theirs(
          std::vector<char>(all->begin() + at, all->begin() + at + size));
      state.peer_listen_addresses.push_back(theirs.getSockaddr());
    } catch (const std::exception&) {
      // Not a TCP address: nothing to shut down for it.
    }
  }
}

absl::Status JobFailure() {
  std::shared_ptr<Job> job = Job::Current();
  return job == nullptr ? absl::OkStatus() : job->health();
}

absl::Status JobFailedError(absl::string_view what, const absl::Status& failure,
                            absl::string_view detail) {
  std::string message =
      absl::StrCat(what, ": the job failed: ", failure.message());
  if (!detail.empty()) absl::StrAppend(&message, " (", detail, ")");
  return absl::Status(failure.code(), message);
}

absl::Duration JobDetectionTime() {
  return EnvMs("PODSCOPE_DEAD_AFTER_MS", absl::Seconds(6)) +
         2 * EnvMs("PODSCOPE_HEARTBEAT_INTERVAL_MS", absl::Seconds(1));
}

absl::Status AwaitJobVerdict() {
  std::shared_ptr<Job> job = Job::Current();
  if (job == nullptr || job->world_size() < 2) return absl::OkStatus();
  const auto deadline = std::chrono::steady_clock::now() +
                        absl::ToChronoMilliseconds(JobDetectionTime());
  while (true) {
    PODSCOPE_RETURN_IF_ERROR(job->health());
    if (std::chrono::steady_clock::now() >= deadline) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

WatchedCollective::WatchedCollective(Communicator::State& state)
    : state_(state) {
  if (state.world_size < 2 || Job::Current() == nullptr) return;
  watched_ = true;
  JobWatcher::Get().Add(this);
}

WatchedCollective::~WatchedCollective() {
  if (watched_) JobWatcher::Get().Remove(this);
}

absl::Status WatchedCollective::failure() const {
  if (!watched_) return absl::OkStatus();
  return JobWatcher::Get().FailureOf(*this);
}

}  // namespace podscope::runtime::internal
