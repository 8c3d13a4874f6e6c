// A worker's event load without a process of its own: a CaptureSource that
// writes a "worker loop" track of scopes at a steady rate, in bursts every
// 10 ms, through a real TraceWriter into whatever sink the server gives it
// (the worker-side file). Lets one process serve many profiler servers,
// each standing for one worker of a pod (capture_worker --servers N).
#ifndef PODSCOPE_TESTS_PROFILER_SYNTHETIC_SOURCE_H_
#define PODSCOPE_TESTS_PROFILER_SYNTHETIC_SOURCE_H_

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/server.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/writer.h"

namespace podscope::profiler::testing {

class SyntheticSource : public CaptureSource {
 public:
  // `scopes_per_s` pairs of nested scopes ("step" holding "inner") a
  // second, on a track of host `host`.
  SyntheticSource(std::string host, int64_t scopes_per_s)
      : host_(std::move(host)), rate_(std::max<int64_t>(scopes_per_s, 100)) {}
  ~SyntheticSource() override {
    (void)Stop();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Start(std::unique_ptr<trace_format::RecordSink> sink,
                     const std::string& session_id, int64_t start_ns) override {
    std::lock_guard<std::mutex> control(control_);
    if (writer_ != nullptr) {
      return absl::FailedPreconditionError("the source is already recording");
    }
    auto writer = trace_format::TraceWriter::Create(std::move(sink));
    if (!writer.ok()) return writer.status();
    writer_ = std::move(*writer);
    trace_format::proto::Metadata metadata;
    metadata.set_host(host_);
    metadata.set_session_id(session_id);
    metadata.set_pid(getpid());
    metadata.set_process_index(-1);
    metadata.set_start_monotonic_ns(std::max(start_ns, MonotonicNs()));
    metadata.set_producer("podscope synthetic worker");
    writer_->SetMetadata(metadata);
    trace_format::proto::Track track;
    track.set_kind(trace_format::proto::TRACK_KIND_THREAD);
    track.set_name("worker loop");
    track_ = writer_->AddTrack(track);
    step_ = writer_->InternString("step");
    inner_ = writer_->InternString("inner");
    events_ = 0;
    stop_ = false;
    // The recording thread is the source's for its whole life: a stop
    // waits for the recording to end, not for a thread to exit (hundreds
    // of threads of one process exiting at the same instant take tens of
    // milliseconds on two cores).
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      start_ns_ = start_ns;
      recording_ = true;
    }
    cv_.notify_all();
    return absl::OkStatus();
  }

  absl::Status Stop() override {
    std::lock_guard<std::mutex> control(control_);
    if (writer_ == nullptr) return absl::OkStatus();
    stop_ = true;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return !recording_; });
    }
    absl::Status s = writer_->Close();
    writer_.reset();
    return s;
  }

  uint64_t events() const override {
    return events_.load(std::memory_order_relaxed);
  }

 private:
  static void SleepUntil(int64_t t_ns) {
    timespec ts;
    ts.tv_sec = t_ns / 1'000'000'000;
    ts.tv_nsec = t_ns % 1'000'000'000;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
    }
  }

  // Records each time Start asks, until the source goes.
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      cv_.wait(lock, [&] { return closing_ || recording_; });
      if (!recording_) return;
      const int64_t start_ns = start_ns_;
      lock.unlock();
      Run(start_ns);
      lock.lock();
      recording_ = false;
      cv_.notify_all();
    }
  }

  // Every 10 ms, the scopes of the 10 ms that passed, spread evenly over
  // them; nothing before `start_ns`. A flush every 100 ms, as a session's.
  void Run(int64_t start_ns) {
    constexpr int64_t kBurstNs = 10'000'000;
    const int64_t per_burst = std::max<int64_t>(rate_ / 100, 1);
    const int64_t spacing = kBurstNs / per_burst;
    int64_t from = std::max(start_ns, MonotonicNs());
    SleepUntil(from);
    int64_t last_flush = from;
    while (!stop_.load(std::memory_order_relaxed)) {
      SleepUntil(from + kBurstNs);
      for (int64_t k = 0; k < per_burst; ++k) {
        const int64_t t = from + k * spacing;
        writer_->AddSlice(track_, t, spacing - 2, step_);
        writer_->AddSlice(track_, t + 1, spacing - 4, inner_);
      }
      events_.fetch_add(2 * static_cast<uint64_t>(per_burst),
                        std::memory_order_relaxed);
      from += kBurstNs;
      if (from - last_flush >= 100'000'000) {
        (void)writer_->Flush();
        last_flush = from;
      }
    }
  }

  const std::string host_;
  const int64_t rate_;
  std::mutex control_;  // Start and Stop, one at a time
  std::unique_ptr<trace_format::TraceWriter> writer_;
  std::mutex mutex_;  // what the recording thread is asked to do
  std::condition_variable cv_;
  bool recording_ = false;
  bool closing_ = false;
  int64_t start_ns_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> events_{0};
  uint32_t track_ = 0, step_ = 0, inner_ = 0;
};

}  // namespace podscope::profiler::testing

#endif  // PODSCOPE_TESTS_PROFILER_SYNTHETIC_SOURCE_H_
