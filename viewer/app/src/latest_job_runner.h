// One background thread that runs the newest job posted to it: a job
// posted while another waits replaces it, so a burst of requests (a range
// dragged, a checkbox toggled twice) costs one computation, not many.
#ifndef PODSCOPE_VIEWER_APP_LATEST_JOB_RUNNER_H_
#define PODSCOPE_VIEWER_APP_LATEST_JOB_RUNNER_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace podscope::viewer::app {

class LatestJobRunner {
 public:
  LatestJobRunner() = default;
  // Waits for the running job (if any); a job still queued is dropped.
  ~LatestJobRunner() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      next_.reset();
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  LatestJobRunner(const LatestJobRunner&) = delete;
  LatestJobRunner& operator=(const LatestJobRunner&) = delete;

  // Drops the queued job and waits until the running one (if any) has
  // returned: afterwards no job reads what the jobs shared until the next
  // Post.
  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    next_.reset();
    cv_.wait(lock, [this] { return !running_; });
  }

  void Post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      next_ = std::move(job);
      if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
    }
    cv_.notify_all();
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || next_.has_value(); });
        if (stop_) return;
        job = std::move(*next_);
        next_.reset();
        running_ = true;
      }
      job();
      {
        std::lock_guard<std::mutex> lock(mu_);
        running_ = false;
      }
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::function<void()>> next_;
  bool stop_ = false;
  bool running_ = false;
  std::thread thread_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_LATEST_JOB_RUNNER_H_
