// How sessions and the flight recorder share the threads' buffers: the
// buffers have one drainer at a time (BufferDrainMutex). While a session
// runs, its writer thread drains them and hands every event to the
// recorder too (RecorderFeed); while none runs, the recorder's own thread
// drains them.
#ifndef PODSCOPE_PROFILER_SRC_FLIGHT_RECORDER_INTERNAL_H_
#define PODSCOPE_PROFILER_SRC_FLIGHT_RECORDER_INTERNAL_H_

#include <mutex>

#include "src/session_drainer.h"

namespace podscope::profiler::internal {

// The recorder's drainer for the length of a session's drain pass (its
// lock held), or null when the recorder is off. Taken after
// BufferDrainMutex().
class RecorderFeed {
 public:
  RecorderFeed();
  RecorderFeed(const RecorderFeed&) = delete;
  RecorderFeed& operator=(const RecorderFeed&) = delete;
  SessionDrainer* drainer() const { return drainer_; }

 private:
  std::unique_lock<std::mutex> lock_;
  SessionDrainer* drainer_ = nullptr;
};

// A session's writer thread starts draining the buffers (before its first
// pass).
void SessionDrainStarts();
// It has drained them for the last time: the buffers of threads that
// exited are freed (when no other session drains) and the recorder forgets
// them.
void SessionDrainEnds();

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_FLIGHT_RECORDER_INTERNAL_H_
