#ifndef PODSCOPE_RUNTIME_SRC_PJRT_STREAM_H_
#define PODSCOPE_RUNTIME_SRC_PJRT_STREAM_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "podscope/runtime/pjrt/future.h"

namespace podscope::runtime::internal {

// An in-order work queue served by one thread: the device's "stream".
// Work enqueued before other work always runs before it.
class Stream {
 public:
  explicit Stream(std::string name);
  // Runs the work still queued, then stops the thread.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void Enqueue(std::function<void()> work);
  // Completes once everything enqueued before it has run.
  Event Marker();
  bool IsStreamThread() const {
    return std::this_thread::get_id() == thread_.get_id();
  }
  const std::string& name() const { return name_; }

 private:
  void Loop();

  std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_PJRT_STREAM_H_
