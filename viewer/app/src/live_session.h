// A session folder (or file) followed while it is written: every 250 ms the
// files are read for what arrived (viewer/core's TraceFollower) and grew()
// tells the window to show it. Runs on the GUI thread, between paints, so
// nothing reads the store while it grows; panels that compute in the
// background get the store once the session has ended (every file closed,
// or Stop()).
#ifndef PODSCOPE_VIEWER_APP_LIVE_SESSION_H_
#define PODSCOPE_VIEWER_APP_LIVE_SESSION_H_

#include <QObject>
#include <QString>
#include <QTimer>
#include <functional>
#include <memory>

#include "podscope/viewer/trace_follower.h"

namespace podscope::viewer::app {

class LiveSession : public QObject {
  Q_OBJECT

 public:
  static constexpr int kRefreshMs = 250;

  // Starts following `path`; the first refresh runs at once.
  LiveSession(const QString& path, bool stop_when_all_final,
              QObject* parent = nullptr);
  ~LiveSession() override;

  std::shared_ptr<const TraceStore> store() const { return follower_.store(); }
  const QString& path() const { return path_; }
  bool active() const { return timer_.isActive(); }
  int refreshes() const { return refreshes_; }
  const TraceFollower& follower() const { return follower_; }
  // Reads once more and ends (files still open are shown as they are).
  void Stop();
  // Reads what arrived now (the timer does it every kRefreshMs), unless
  // the gate says the store is in use (a background computation reads it):
  // then the next tick tries again.
  void Refresh();
  void set_gate(std::function<bool()> gate) { gate_ = std::move(gate); }

 signals:
  // The store grew (or its problems changed).
  void grew(qulonglong events_added);
  // The path could not be followed.
  void failed(const QString& message);
  // Following ended: every file was closed, or Stop().
  void ended();

 private:
  QString path_;
  TraceFollower follower_;
  QTimer timer_;
  bool stop_when_all_final_;
  std::function<bool()> gate_;
  int refreshes_ = 0;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_LIVE_SESSION_H_
