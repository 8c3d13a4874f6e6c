// The flight recorder: what a dump holds (the last window, nothing older),
// its memory bound, dumps while a session records, and the file a dump
// leaves (tests/tools/dump_cli_test.cc opens it with the tools).
#include "podscope/profiler/flight_recorder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "podscope/base/sanitizers.h"
#include "podscope/profiler/recorder.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "trace_file.h"

namespace podscope::profiler {
namespace {

using testing::FreshDir;
using testing::ReadTraceFile;
using testing::TraceFile;
using testing::TrackView;

// Stops the recorder however a test ends.
struct RecorderOn {
  explicit RecorderOn(const FlightRecorderOptions& options) {
    status = StartFlightRecorder(options);
  }
  ~RecorderOn() { StopFlightRecorder(); }
  absl::Status status;
};

FlightRecorderOptions ShortWindow(int window_ms, int interval_ms) {
  FlightRecorderOptions o;
  o.window = std::chrono::milliseconds(window_ms);
  o.drain_interval = std::chrono::milliseconds(interval_ms);
  return o;
}

// Scopes named `name`, each about 1 ms, until `until_ns`; how many.
size_t RecordUntil(const char* name, int64_t until_ns) {
  size_t n = 0;
  while (NowNs() < until_ns) {
    Trace t(name);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++n;
  }
  return n;
}

int64_t Ms(int ms) { return int64_t{ms} * 1000000; }

// The one trace file a dump left in `dir`.
TraceFile ReadDump(const FlightRecorderDump& dump) {
  TraceFile f = ReadTraceFile(dump.path);
  EXPECT_NE(f.reader, nullptr) << dump.path;
  return f;
}

TEST(FlightRecorder, RecordsWithoutASession) {
  RecorderOn on(ShortWindow(5000, 20));
  ASSERT_TRUE(on.status.ok()) << on.status;
  ASSERT_FALSE(IsTracing());
  EXPECT_TRUE(IsRecording(Level::kInfo));
  EXPECT_FALSE(IsRecording(Level::kVerbose));
  { PODSCOPE_TRACE("while_nothing_traces"); }
  PODSCOPE_INSTANT("an instant");
  const std::string dir = FreshDir("no-session") + "/dump-1";
  auto dump = DumpFlightRecorder(dir, "a test");
  ASSERT_TRUE(dump.ok()) << dump.status();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(std::filesystem::path(dump->path).filename().string(),
            std::string(host) + "." + std::to_string(getpid()) + ".podtrace");
  // Nothing but the file: no temporary left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".podtrace") << e.path();
  }
  EXPECT_EQ(files, 1);
  const TraceFile f = ReadDump(*dump);
  ASSERT_NE(f.reader, nullptr);
  EXPECT_TRUE(f.reader->report().intact()) << f.reader->report().Describe();
  EXPECT_EQ(f.SlicesNamed("while_nothing_traces").size(), 1u);
  EXPECT_EQ(f.reader->metadata().pid(), getpid());
  EXPECT_EQ(f.reader->metadata().session_id(), "dump-1");
  EXPECT_EQ(f.reader->metadata().attributes().at("flight_recorder.reason"),
            "a test");
  EXPECT_EQ(dump->events, f.reader->known_event_count());
}

TEST(FlightRecorder, StoppedRecorderLeavesTheProcessUnrecorded) {
  {
    RecorderOn on(ShortWindow(1000, 20));
    ASSERT_TRUE(on.status.ok());
    EXPECT_TRUE(IsRecording());
  }
  EXPECT_FALSE(IsRecording());
  auto dump = DumpFlightRecorder(FreshDir("off"), "x");
  EXPECT_EQ(dump.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(FlightRecorder, DumpHoldsOnlyTheLastWindow) {
  constexpr int kWindowMs = 1000, kIntervalMs = 50;
  RecorderOn on(ShortWindow(kWindowMs, kIntervalMs));
  ASSERT_TRUE(on.status.ok()) << on.status;
  const int64_t t0 = NowNs();
  RecordUntil("old", t0 + Ms(200));
  // Long enough for every "old" scope to leave the window.
  const int64_t old_end = NowNs();
  RecordUntil("middle", old_end + Ms(kWindowMs + 3 * kIntervalMs));
  const size_t recent = RecordUntil("recent", NowNs() + Ms(100));
  const int64_t dump_at = NowNs();
  auto dump = DumpFlightRecorder(FreshDir("window"), "window test");
  ASSERT_TRUE(dump.ok()) << dump.status();
  const TraceFile f = ReadDump(*dump);
  ASSERT_NE(f.reader, nullptr);
  EXPECT_TRUE(f.reader->report().intact()) << f.reader->report().Describe();
  EXPECT_TRUE(f.SlicesNamed("old").empty());
  EXPECT_FALSE(f.SlicesNamed("middle").empty());
  // Every recent scope, up to the last one before the dump (all of them
  // are inside the window).
  EXPECT_GE(recent, 50u);
  EXPECT_EQ(f.SlicesNamed("recent").size(), recent);
  // The file covers the whole window and begins where its oldest chunk
  // began; nothing in it ended earlier, however late the recorder's thread
  // ran on a busy machine.
  const int64_t dumped = NowNs();
  EXPECT_LE(dump->window_start_ns, dumped - Ms(kWindowMs));
  EXPECT_GT(dump->window_start_ns, old_end);
  for (const auto& t : f.tracks) {
    for (const auto& s : t.events.slices) {
      EXPECT_GE(s.start_ns + s.duration_ns, dump->window_start_ns)
          << f.Name(s.name) << " ended "
          << (dump->window_start_ns - s.start_ns - s.duration_ns) / 1000
          << " us before the file's start, "
          << (dump_at - dump->window_start_ns) / 1000000
          << " ms before the dump";
    }
  }
}

TEST(FlightRecorder, BytesAreBoundedAndDropsCounted) {
  FlightRecorderOptions o = ShortWindow(60000, 20);
  o.max_bytes = 1 << 20;
  RecorderOn on(o);
  ASSERT_TRUE(on.status.ok()) << on.status;
  // Arguments that do not compress away: chunks of tens of KiB.
  uint64_t n = 0;
  while (GetFlightRecorderStats().dropped_chunks < 3) {
    for (int i = 0; i < 2000; ++i, ++n) {
      PODSCOPE_TRACE("burst", "n", n * 2654435761u);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  { PODSCOPE_TRACE("last"); }
  const FlightRecorderStats stats = GetFlightRecorderStats();
  EXPECT_LE(stats.bytes, static_cast<uint64_t>(o.max_bytes));
  EXPECT_GT(stats.dropped_events, 0u);
  auto dump = DumpFlightRecorder(FreshDir("bounded"), "bounded");
  ASSERT_TRUE(dump.ok()) << dump.status();
  EXPECT_LE(dump->bytes, static_cast<uint64_t>(o.max_bytes) + 4096);
  const TraceFile f = ReadDump(*dump);
  ASSERT_NE(f.reader, nullptr);
  EXPECT_EQ(f.SlicesNamed("last").size(), 1u);
  // The oldest went first: the first burst is gone.
  const auto bursts = f.SlicesNamed("burst");
  ASSERT_FALSE(bursts.empty());
  EXPECT_LT(bursts.size(), n);
  EXPECT_EQ(
      f.reader->metadata().attributes().at("flight_recorder.dropped_events"),
      std::to_string(GetFlightRecorderStats().dropped_events));
}

// A session records every event it would without the recorder, while
// dumps are taken, and the dumps hold the session's events too.
TEST(FlightRecorder, DumpDuringATraceLeavesTheTraceWhole) {
  RecorderOn on(ShortWindow(30000, 20));
  ASSERT_TRUE(on.status.ok()) << on.status;
  { PODSCOPE_TRACE("before_the_trace"); }
  const std::string dir = FreshDir("during-trace");
  TraceOptions options;
  options.flush_interval = std::chrono::milliseconds(40);
  ASSERT_TRUE(StartTrace(dir + "/trace", options).ok());
  constexpr int kSteps = 3000;
  std::atomic<bool> done{false};
  std::thread worker([&] {
    SetThreadName("stepper");
    for (int i = 0; i < kSteps; ++i) {
      PODSCOPE_TRACE("step", "i", i);
      if (i % 100 == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    done = true;
  });
  std::vector<FlightRecorderDump> dumps;
  while (!done) {
    auto dump = DumpFlightRecorder(
        dir + "/dumps-" + std::to_string(dumps.size()), "during a trace");
    ASSERT_TRUE(dump.ok()) << dump.status();
    dumps.push_back(*dump);
  }
  worker.join();
  auto path = StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  { PODSCOPE_TRACE("after_the_trace"); }
  ASSERT_FALSE(dumps.empty());

  const TraceFile trace = ReadTraceFile(*path);
  ASSERT_NE(trace.reader, nullptr);
  EXPECT_TRUE(trace.reader->report().intact());
  const TrackView* steps = trace.Track("stepper");
  ASSERT_NE(steps, nullptr);
  std::vector<int> seen(kSteps, 0);
  for (uint32_t i = 0; i < steps->events.slices.size(); ++i) {
    const int64_t step = trace.IntArg(*steps, i, "i");
    ASSERT_TRUE(step >= 0 && step < kSteps);
    ++seen[step];
  }
  for (int i = 0; i < kSteps; ++i) ASSERT_EQ(seen[i], 1) << "step " << i;
  EXPECT_TRUE(trace.SlicesNamed("before_the_trace").empty());

  auto after = DumpFlightRecorder(dir + "/after", "after the trace");
  ASSERT_TRUE(after.ok()) << after.status();
  const TraceFile last = ReadDump(*after);
  ASSERT_NE(last.reader, nullptr);
  EXPECT_EQ(last.SlicesNamed("step").size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(last.SlicesNamed("before_the_trace").size(), 1u);
  EXPECT_EQ(last.SlicesNamed("after_the_trace").size(), 1u);
  for (const FlightRecorderDump& d : dumps) {
    const TraceFile f = ReadDump(d);
    ASSERT_NE(f.reader, nullptr);
    EXPECT_TRUE(f.reader->report().intact());
  }
}

// A program that exits with the recorder on (the common case: it is on
// for the process's life) exits normally.
TEST(FlightRecorder, AProcessExitsWithTheRecorderRunning) {
#if PODSCOPE_TSAN
  // The recorder's thread runs on while static objects are destroyed, on
  // purpose; ThreadSanitizer calls that a race, and a fork of a process
  // that ran threads is outside what it supports.
  GTEST_SKIP() << "not under ThreadSanitizer";
#endif
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!StartFlightRecorder(ShortWindow(1000, 5)).ok()) _exit(3);
    for (int i = 0; i < 1000; ++i) PODSCOPE_TRACE("until_exit");
    std::exit(0);  // static destructors run, the recorder's thread goes on
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  if (WIFEXITED(status)) {
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

TEST(FlightRecorder, ParsesTheEnvironmentsWindow) {
  using std::chrono::milliseconds;
  EXPECT_EQ(*ParseFlightRecorderWindow("30s"), milliseconds(30000));
  EXPECT_EQ(*ParseFlightRecorderWindow("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseFlightRecorderWindow("2m"), milliseconds(120000));
  EXPECT_EQ(*ParseFlightRecorderWindow("45"), milliseconds(45000));
  EXPECT_EQ(*ParseFlightRecorderWindow("0"), milliseconds(0));
  EXPECT_EQ(*ParseFlightRecorderWindow("off"), milliseconds(0));
  for (const char* bad : {"", "s", "-3s", "30x", "1h", "99999999999m", "3 s"}) {
    auto w = ParseFlightRecorderWindow(bad);
    EXPECT_FALSE(w.ok()) << bad;
    if (!w.ok()) {
      EXPECT_NE(w.status().message().find("PODSCOPE_FLIGHT_RECORDER"),
                std::string::npos);
    }
  }
}

TEST(FlightRecorder, TheEnvironmentTurnsItOn) {
  setenv(kFlightRecorderEnv, "7s", 1);
  SetProcessInfo(0, 1);
  unsetenv(kFlightRecorderEnv);
  EXPECT_TRUE(FlightRecorderRunning());
  StopFlightRecorder();
  setenv(kFlightRecorderEnv, "0", 1);
  EXPECT_TRUE(StartFlightRecorderFromEnv().ok());
  EXPECT_FALSE(FlightRecorderRunning());
  setenv(kFlightRecorderEnv, "soon", 1);
  EXPECT_FALSE(StartFlightRecorderFromEnv().ok());
  EXPECT_FALSE(FlightRecorderRunning());
  unsetenv(kFlightRecorderEnv);
  SetProcessInfo(-1, 0);
}

// Threads recording and ending, traces starting and stopping, dumps:
// all at once (the ThreadSanitizer run's case).
TEST(FlightRecorder, DumpsTracesAndThreadsAtOnce) {
  RecorderOn on(ShortWindow(2000, 5));
  ASSERT_TRUE(on.status.ok()) << on.status;
  const std::string dir = FreshDir("at-once");
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      while (!stop) {
        // Short-lived threads: their buffers are freed while the
        // recorder keeps their tracks.
        std::thread([] {
          for (int i = 0; i < 500; ++i) PODSCOPE_TRACE("work", "i", i);
        }).join();
      }
    });
  }
  threads.emplace_back([&] {
    TraceOptions options;
    options.flush_interval = std::chrono::milliseconds(10);
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(StartTrace(dir + "/t" + std::to_string(i), options).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ASSERT_TRUE(StopTrace().ok());
    }
  });
  for (int i = 0; i < 10; ++i) {
    auto dump = DumpFlightRecorder(dir + "/d" + std::to_string(i), "busy");
    ASSERT_TRUE(dump.ok()) << dump.status();
    const TraceFile f = ReadDump(*dump);
    ASSERT_NE(f.reader, nullptr);
    EXPECT_TRUE(f.reader->report().intact());
  }
  threads.back().join();
  threads.pop_back();
  stop = true;
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace podscope::profiler
