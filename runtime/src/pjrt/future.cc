#include "podscope/runtime/pjrt/future.h"

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
    if (state_->has_status) return;
    state_->has_status = true;
    state_->status = std::move(status);
    callbacks.swap(state_->callbacks);
  }
  // The status is immutable from here on, so callbacks read it unlocked.
  // Waiters are woken only after the callbacks ran, so whoever awaits the
  // event also sees their effects.
  for (auto& callback : callbacks) callback(state_->status);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->ready = true;
  }
  state_->cv.notify_all();
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
    if (!state_->has_status) {
      state_->callbacks.push_back(std::move(callback));
      return;
    }
  }
  callback(state_->status);
}

}  // namespace podscope::runtime
