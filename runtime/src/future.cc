#include "podscope/runtime/future.h"

namespace podscope::runtime {

Event::Event() : state_(std::make_shared<State>()) {}

Event Event::Ready(absl::Status status) {
  Event event;
  event.Set(std::move(status));
  return event;
}

void Event::Set(absl::Status status) const {
  std::vector<std::function<void(const absl::Status&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->ready) return;
    state_->ready = true;
    state_->status = std::move(status);
    callbacks.swap(state_->callbacks);
  }
  state_->cv.notify_all();
  // The status is immutable once ready, so callbacks may read it unlocked.
  for (auto& callback : callbacks) callback(state_->status);
}

bool Event::IsReady() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->ready;
}

absl::Status Event::Await() const {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [this] { return state_->ready; });
  return state_->status;
}

void Event::OnReady(std::function<void(const absl::Status&)> callback) const {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->ready) {
      state_->callbacks.push_back(std::move(callback));
      return;
    }
  }
  callback(state_->status);
}

}  // namespace podscope::runtime
