#include "pjrt/stream.h"

#include <pthread.h>

#include <utility>

namespace podscope::runtime::internal {

Stream::Stream(std::string name) : name_(std::move(name)) {
  thread_ = std::thread([this] { Loop(); });
  // Thread names show up in traces and debuggers; Linux caps them at 15.
  pthread_setname_np(thread_.native_handle(), name_.substr(0, 15).c_str());
}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Stream::Enqueue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

Event Stream::Marker() {
  Event event;
  Enqueue([event] { event.Set(absl::OkStatus()); });
  return event;
}

void Stream::Loop() {
  while (true) {
    std::function<void()> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and drained
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
    // `work` (and what it captured) is destroyed here, before the next
    // task runs; Device::WaitUntilIdle() relies on that.
  }
}

}  // namespace podscope::runtime::internal
