// Sessions: files, metadata, bounded memory with counted drops, and what a
// killed process leaves behind.
#include "podscope/profiler/session.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "podscope/profiler/clock.h"
#include "podscope/profiler/trace.h"
#include "trace_file.h"

extern char** environ;

namespace podscope::profiler {
namespace {

using testing::FreshDir;
using testing::ReadTraceFile;

TEST(Session, WritesHostPidFileWithMetadata) {
  const std::string dir = FreshDir("metadata");
  SetProcessInfo(2, 4);
  TraceOptions options;
  options.session_id = "job-42";
  ASSERT_TRUE(StartTrace(dir, options).ok());
  EXPECT_TRUE(IsTracing());
  { PODSCOPE_TRACE("one"); }
  auto path = StopTrace();
  SetProcessInfo(-1, 0);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_FALSE(IsTracing());
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(std::filesystem::path(*path).filename().string(),
            std::string(host) + "." + std::to_string(getpid()) + ".podtrace");
  // A named session gets its folder, which other processes of the job
  // (and `podscope capture`) share.
  EXPECT_EQ(std::filesystem::path(*path).parent_path().string(),
            (std::filesystem::path(dir) / "job-42").string());
  const auto file = ReadTraceFile(*path);
  ASSERT_NE(file.reader, nullptr);
  const auto& m = file.reader->metadata();
  EXPECT_EQ(m.host(), host);
  EXPECT_EQ(m.pid(), getpid());
  EXPECT_EQ(m.process_index(), 2);
  EXPECT_EQ(m.process_count(), 4);
  EXPECT_EQ(m.session_id(), "job-42");
  ASSERT_FALSE(m.command_line().empty());
  EXPECT_NE(m.command_line(0).find("profiler"), std::string::npos);
  EXPECT_GT(m.start_realtime_ns(), 0);
  EXPECT_GT(m.tsc().ns_per_tick(), 0);
  EXPECT_EQ(m.capture_options().at("level"), "2");
  EXPECT_GE(file.reader->clock().snapshots_size(), 2);
  EXPECT_EQ(file.SlicesNamed("one").size(), 1u);
  // Process counters are sampled at each flush.
  EXPECT_EQ(file.TracksNamed("process resident memory").size(), 1u);
}

// A session given a clock of its own stamps its events, metadata and
// clock snapshots on that clock, and says so in the file; the process's
// clock (and the next session) are untouched.
TEST(Session, ASkewedClockMovesTheSessionsTimestamps) {
  const std::string dir = FreshDir("skewed");
  constexpr int64_t kOffset = int64_t{7'500'000'000};  // +7.5 s
  constexpr double kDriftPpm = 2000;
  ClockSkew skew;
  skew.offset_ns = kOffset;
  skew.drift_ppm = kDriftPpm;
  skew.anchor_ns = MonotonicNs();
  TraceOptions options;
  options.clock = std::make_shared<SkewedClock>(skew);
  const int64_t before = MonotonicNs();
  ASSERT_TRUE(StartTrace(dir, options).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const int64_t mark_begin = MonotonicNs();
  { PODSCOPE_TRACE("mark"); }
  const int64_t mark_end = MonotonicNs();
  auto path = StopTrace();
  const int64_t after = MonotonicNs();
  ASSERT_TRUE(path.ok()) << path.status();
  const auto file = ReadTraceFile(*path);
  ASSERT_NE(file.reader, nullptr);
  const auto& m = file.reader->metadata();
  // The start lies on the skewed clock, 7.5 s ahead of the monotonic one.
  EXPECT_GE(m.start_monotonic_ns(), skew.Apply(before));
  EXPECT_LE(m.start_monotonic_ns(), skew.Apply(after));
  EXPECT_EQ(m.capture_options().at("test_clock_offset_ns"), "7500000000");
  EXPECT_EQ(m.capture_options().at("test_clock_drift_ppm"), "2000");
  const auto marks = file.SlicesNamed("mark");
  ASSERT_EQ(marks.size(), 1u);
  // 400 ms after the anchor the drift adds 800 us: the mark is where the
  // skewed clock puts it (within the TSC calibration's error on a loaded
  // machine, up to ~100 ppm), not where the offset alone would.
  const int64_t slack = 150'000;
  EXPECT_GE(marks[0].start_ns, skew.Apply(mark_begin) - slack);
  EXPECT_LE(marks[0].start_ns, skew.Apply(mark_end) + slack);
  EXPECT_GT(marks[0].start_ns, mark_begin + kOffset + 400'000);
  for (const auto& snap : file.reader->clock().snapshots()) {
    EXPECT_GE(snap.monotonic_ns(), skew.Apply(before));
    EXPECT_LE(snap.monotonic_ns(), skew.Apply(after));
  }

  // The next session, on the process's clock, is not skewed.
  ASSERT_TRUE(StartTrace(FreshDir("unskewed")).ok());
  const int64_t plain_begin = MonotonicNs();
  { PODSCOPE_TRACE("mark"); }
  const int64_t plain_end = MonotonicNs();
  auto plain = StopTrace();
  ASSERT_TRUE(plain.ok()) << plain.status();
  const auto plain_file = ReadTraceFile(*plain);
  ASSERT_NE(plain_file.reader, nullptr);
  EXPECT_EQ(plain_file.reader->metadata().capture_options().count(
                "test_clock_offset_ns"),
            0u);
  const auto plain_marks = plain_file.SlicesNamed("mark");
  ASSERT_EQ(plain_marks.size(), 1u);
  EXPECT_GE(plain_marks[0].start_ns, plain_begin - slack);
  EXPECT_LE(plain_marks[0].start_ns, plain_end + slack);
}

TEST(Session, PerProcessSubfolderAndSessionFromEnvironment) {
  const std::string dir = FreshDir("subdir");
  setenv("PODSCOPE_SESSION", "from-env", 1);
  TraceOptions options;
  options.per_process_subdir = true;
  ASSERT_TRUE(StartTrace(dir, options).ok());
  auto path = StopTrace();
  unsetenv("PODSCOPE_SESSION");
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(std::filesystem::path(*path).parent_path().filename().string(),
            "proc_" + std::to_string(getpid()));
  EXPECT_EQ(std::filesystem::path(*path).parent_path().parent_path().string(),
            (std::filesystem::path(dir) / "from-env").string());
  const auto file = ReadTraceFile(*path);
  EXPECT_EQ(file.reader->metadata().session_id(), "from-env");
}

TEST(Session, NoSessionIdWritesIntoTheFolderItself) {
  const std::string dir = FreshDir("unnamed");
  ASSERT_TRUE(StartTrace(dir).ok());
  auto path = StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(std::filesystem::path(*path).parent_path().string(), dir);
}

TEST(Session, SessionIdThatIsNotAFolderNameIsRefused) {
  const std::string dir = FreshDir("badsession");
  for (const char* bad : {"../escape", "a/b", "..", "x y"}) {
    TraceOptions options;
    options.session_id = bad;
    const absl::Status s = StartTrace(dir, options);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("session id"), std::string::npos) << s;
    EXPECT_FALSE(IsTracing());
  }
}

TEST(Session, MisuseIsAClearError) {
  auto stopped = StopTrace();
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string dir = FreshDir("twice");
  ASSERT_TRUE(StartTrace(dir).ok());
  absl::Status again = StartTrace(dir);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("already being recorded"),
            absl::string_view::npos);
  ASSERT_TRUE(StopTrace().ok());
  EXPECT_EQ(StartTrace("").code(), absl::StatusCode::kInvalidArgument);
  // A path under a regular file cannot be created.
  const std::string file = FreshDir("blocker") + "/file";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    std::fclose(f);
  }
  absl::Status bad = StartTrace(file + "/sub");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find(file), absl::string_view::npos);
  EXPECT_FALSE(IsTracing());
}

TEST(Session, FullBuffersDropAndCountExactlyWithoutBlocking) {
  const std::string dir = FreshDir("overflow");
  TraceOptions options;
  options.max_blocks_per_thread = 1;               // 2048 slots
  options.flush_interval = std::chrono::hours(1);  // the writer never drains
  options.process_counters = false;
  ASSERT_TRUE(StartTrace(dir, options).ok());
  constexpr int kAttempts = 100000;
  const auto start = std::chrono::steady_clock::now();
  std::thread([&] {
    SetThreadName("overflowing");
    for (int i = 0; i < kAttempts; ++i) PODSCOPE_TRACE("tiny");
  }).join();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const SessionStats live = CurrentSessionStats();
  auto path = StopTrace();
  ASSERT_TRUE(path.ok());
  // Dropping is as cheap as recording: nothing waited for the writer.
  EXPECT_LT(elapsed, std::chrono::seconds(2));
  (void)live;
  const auto file = ReadTraceFile(*path);
  auto tracks = file.TracksNamed("overflowing");
  ASSERT_EQ(tracks.size(), 1u);
  const uint64_t recorded = tracks[0]->events.slices.size();
  const auto& drops = file.reader->drop_counts();
  ASSERT_TRUE(drops.contains(tracks[0]->track.id()));
  const uint64_t dropped = drops.at(tracks[0]->track.id());
  EXPECT_EQ(recorded, 2048u);
  EXPECT_EQ(recorded + dropped, static_cast<uint64_t>(kAttempts));
}

// max_blocks_total bounds all threads together: once it is spent, a thread
// under its own bound drops (and counts) too.
TEST(Session, TheSessionBudgetBoundsAllThreadsTogether) {
  const std::string dir = FreshDir("session_budget");
  TraceOptions options;
  options.max_blocks_per_thread = 4;
  options.max_blocks_total = 6;
  options.flush_interval = std::chrono::hours(1);  // the writer never drains
  options.process_counters = false;
  ASSERT_TRUE(StartTrace(dir, options).ok());
  constexpr int kAttempts = 50000;
  for (const char* name : {"first", "second"}) {
    std::thread([&] {
      SetThreadName(name);
      for (int i = 0; i < kAttempts; ++i) PODSCOPE_TRACE("budgeted");
    }).join();
  }
  auto path = StopTrace();
  ASSERT_TRUE(path.ok());
  const auto file = ReadTraceFile(*path);
  uint64_t recorded[2] = {0, 0};
  int i = 0;
  for (const char* name : {"first", "second"}) {
    auto tracks = file.TracksNamed(name);
    ASSERT_EQ(tracks.size(), 1u) << name;
    recorded[i] = tracks[0]->events.slices.size();
    const auto& drops = file.reader->drop_counts();
    const auto it = drops.find(tracks[0]->track.id());
    const uint64_t dropped = it == drops.end() ? 0 : it->second;
    EXPECT_EQ(recorded[i] + dropped, static_cast<uint64_t>(kAttempts)) << name;
    ++i;
  }
  EXPECT_LE(recorded[0], 4u * 2048);
  // The second thread had its own 4 blocks left but not the session's.
  EXPECT_LT(recorded[1], 4u * 2048);
  EXPECT_LE(recorded[0] + recorded[1], 6u * 2048);
}

TEST(Session, WriterRecyclesBlocksSoABusyThreadLosesNothing) {
  const std::string dir = FreshDir("recycle");
  TraceOptions options;
  // 64 blocks are 128k events of slack: a loaded machine can delay the
  // writer by half a second without a drop.
  options.max_blocks_per_thread = 64;
  options.flush_interval = std::chrono::milliseconds(5);
  ASSERT_TRUE(StartTrace(dir, options).ok());
  constexpr int kEvents = 200000;
  std::thread([&] {
    SetThreadName("paced");
    for (int i = 0; i < kEvents; ++i) {
      PODSCOPE_TRACE("paced_event");
      if (i % 2048 == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }).join();
  auto path = StopTrace();
  ASSERT_TRUE(path.ok());
  const auto file = ReadTraceFile(*path);
  EXPECT_EQ(file.SlicesNamed("paced_event").size(),
            static_cast<size_t>(kEvents));
  EXPECT_EQ(file.reader->total_dropped(), 0u);
}

// Threads record while the writer drains their current blocks and recycles
// full ones every millisecond: every attempt is either in the file or
// counted as dropped (also run under ThreadSanitizer).
TEST(Session, ConcurrentRecordingWhileTheWriterDrains) {
  const std::string dir = FreshDir("concurrent");
  TraceOptions options;
  options.max_blocks_per_thread = 2;
  options.flush_interval = std::chrono::milliseconds(1);
  ASSERT_TRUE(StartTrace(dir, options).ok());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 60000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      SetThreadName("stress " + std::to_string(t));
      for (int i = 0; i < kPerThread; ++i) {
        if (i % 3 == 0) {
          PODSCOPE_TRACE("stress_args", "i", i);
        } else {
          PODSCOPE_TRACE("stress");
        }
        if (i % 5000 == 0) std::this_thread::yield();
      }
    });
  }
  for (auto& th : threads) th.join();
  auto path = StopTrace();
  ASSERT_TRUE(path.ok());
  const auto file = ReadTraceFile(*path);
  for (int t = 0; t < kThreads; ++t) {
    auto tracks = file.TracksNamed("stress " + std::to_string(t));
    ASSERT_EQ(tracks.size(), 1u);
    const uint64_t recorded = tracks[0]->events.slices.size();
    const auto& drops = file.reader->drop_counts();
    const auto it = drops.find(tracks[0]->track.id());
    const uint64_t dropped = it == drops.end() ? 0 : it->second;
    EXPECT_EQ(recorded + dropped, static_cast<uint64_t>(kPerThread)) << t;
    // Arguments stay with their events.
    for (uint32_t i = 0; i < tracks[0]->events.slices.size(); ++i) {
      const bool has_args =
          file.Name(tracks[0]->events.slices[i].name) == "stress_args";
      EXPECT_EQ(tracks[0]->events.FindArgs(trace_format::EventKind::kSlice,
                                           i) != nullptr,
                has_args);
    }
  }
}

// The child (tests/profiler/crash_child.cc) records one "tick" slice per
// millisecond with its sequence number and is killed with SIGKILL.
TEST(Session, KilledProcessLeavesAFileReadableToItsLastFlush) {
  const std::string dir = FreshDir("killed");
  pid_t pid;
  std::string child = PODSCOPE_CRASH_CHILD;
  char* argv[] = {child.data(), const_cast<char*>(dir.c_str()), nullptr};
  ASSERT_EQ(posix_spawn(&pid, child.c_str(), nullptr, nullptr, argv, environ),
            0);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  std::string path;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    path = e.path().string();
  }
  ASSERT_FALSE(path.empty()) << "the child wrote no file";
  const auto file = ReadTraceFile(path);
  ASSERT_NE(file.reader, nullptr);
  const auto report = file.reader->report();
  EXPECT_FALSE(report.has_index);
  // At most a torn tail; nothing in the middle.
  for (const auto& r : report.skipped) {
    EXPECT_EQ(r.offset + r.bytes, report.file_bytes) << r.reason;
  }
  // The ticks form an unbroken prefix 0..n-1 and cover most of the run:
  // the child flushes every 50 ms and started ~700 ms before the kill.
  std::vector<int64_t> seq;
  for (const auto& t : file.tracks) {
    for (uint32_t i = 0; i < t.events.slices.size(); ++i) {
      if (file.Name(t.events.slices[i].name) != "tick") continue;
      const auto* args = t.events.FindArgs(trace_format::EventKind::kSlice, i);
      ASSERT_NE(args, nullptr);
      seq.push_back(std::get<int64_t>(args->args[0].value));
    }
  }
  std::sort(seq.begin(), seq.end());
  ASSERT_GT(seq.size(), 100u);
  for (size_t i = 0; i < seq.size(); ++i)
    ASSERT_EQ(seq[i], static_cast<int64_t>(i));
}

}  // namespace
}  // namespace podscope::profiler
