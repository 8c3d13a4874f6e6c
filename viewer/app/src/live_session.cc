#include "live_session.h"

namespace podscope::viewer::app {

LiveSession::LiveSession(const QString& path, bool stop_when_all_final,
                         QObject* parent)
    : QObject(parent),
      path_(path),
      follower_(path.toStdString()),
      stop_when_all_final_(stop_when_all_final) {
  timer_.setInterval(kRefreshMs);
  connect(&timer_, &QTimer::timeout, this, &LiveSession::Refresh);
  timer_.start();
  QTimer::singleShot(0, this, &LiveSession::Refresh);
}

LiveSession::~LiveSession() = default;

void LiveSession::Refresh() {
  if (!timer_.isActive()) return;
  if (gate_ && !gate_()) return;
  ++refreshes_;
  auto update = follower_.Refresh();
  if (!update.ok()) {
    timer_.stop();
    emit failed(QString::fromStdString(std::string(update.status().message())));
    emit ended();
    return;
  }
  if (update->changed()) emit grew(update->events_added);
  if (stop_when_all_final_ && follower_.all_final()) {
    timer_.stop();
    emit ended();
  }
}

void LiveSession::Stop() {
  if (!timer_.isActive()) return;
  auto update = follower_.Refresh();
  timer_.stop();
  if (update.ok() && update->changed()) emit grew(update->events_added);
  emit ended();
}

}  // namespace podscope::viewer::app
