// Runs the Qt event loop while background work is under way, for windows
// whose tests (and scripted use) wait until the work is shown.
#ifndef PODSCOPE_VIEWER_APP_EVENT_PUMP_H_
#define PODSCOPE_VIEWER_APP_EVENT_PUMP_H_

#include <QApplication>
#include <QElapsedTimer>
#include <QThread>
#include <functional>

namespace podscope::viewer::app {

// Processes events until `busy()` is false (then once more, so that what
// the work posted is shown); false when `timeout_ms` passed first.
inline bool PumpEventsWhile(const std::function<bool()>& busy, int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (busy()) {
    if (timer.elapsed() > timeout_ms) return false;
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    if (busy()) QThread::msleep(2);
  }
  QApplication::processEvents();
  return true;
}

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_EVENT_PUMP_H_
