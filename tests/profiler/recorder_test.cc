// The recording API end to end: what a program marks is what the file
// holds.
#include "podscope/profiler/recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "trace_file.h"

namespace podscope::profiler {
namespace {

using testing::FreshDir;
using testing::ReadTraceFile;

std::string Capture(const std::string& name, const std::function<void()>& fn,
                    TraceOptions options = {}) {
  const std::string dir = FreshDir(name);
  EXPECT_TRUE(StartTrace(dir, options).ok());
  fn();
  auto path = StopTrace();
  EXPECT_TRUE(path.ok()) << path.status();
  return path.ok() ? *path : "";
}

void Nest(int depth, int thread) {
  PODSCOPE_TRACE("nest", "depth", depth, "thread", thread);
  if (depth > 0) {
    Nest(depth - 1, thread);
    Nest(depth - 1, thread);
  }
}

TEST(Recorder, NestingAndOrderPerThreadAcrossManyThreads) {
  constexpr int kThreads = 8;
  constexpr int kDepth = 6;  // 2^7 - 1 scopes per thread
  const std::string path = Capture("nesting", [] {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([t] {
        SetThreadName("worker " + std::to_string(t));
        Nest(kDepth, t);
      });
    }
    for (auto& th : threads) th.join();
  });
  const auto file = ReadTraceFile(path);
  ASSERT_NE(file.reader, nullptr);
  EXPECT_TRUE(file.reader->report().intact());
  for (int t = 0; t < kThreads; ++t) {
    auto tracks = file.TracksNamed("worker " + std::to_string(t));
    ASSERT_EQ(tracks.size(), 1u) << t;
    const auto& events = tracks[0]->events;
    ASSERT_EQ(events.slices.size(), 127u);
    // Every slice carries the depth argument it was recorded with, and its
    // nesting depth in the file matches the recursion.
    for (uint32_t i = 0; i < events.slices.size(); ++i) {
      const auto* args = events.FindArgs(trace_format::EventKind::kSlice, i);
      ASSERT_NE(args, nullptr);
      ASSERT_EQ(args->args.size(), 2u);
      EXPECT_EQ(file.Name(args->args[0].key), "depth");
      const int64_t depth = std::get<int64_t>(args->args[0].value);
      EXPECT_EQ(events.slices[i].depth, static_cast<uint32_t>(kDepth - depth));
      EXPECT_EQ(std::get<int64_t>(args->args[1].value), t);
      if (i > 0) {
        EXPECT_LE(events.slices[i - 1].start_ns, events.slices[i].start_ns);
      }
    }
    // Children lie within their parents.
    const auto& root = events.slices[0];
    for (const auto& s : events.slices) {
      EXPECT_GE(s.start_ns, root.start_ns);
      EXPECT_LE(s.end_ns(), root.end_ns());
    }
  }
}

TEST(Recorder, TimestampsAreOnTheMonotonicClock) {
  int64_t before = 0, after = 0;
  const std::string path = Capture("clock", [&] {
    before = NowNs();
    {
      PODSCOPE_TRACE("timed");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    after = NowNs();
  });
  const auto file = ReadTraceFile(path);
  const auto slices = file.SlicesNamed("timed");
  ASSERT_EQ(slices.size(), 1u);
  // The TSC map is fitted against CLOCK_MONOTONIC; allow a few µs.
  EXPECT_GE(slices[0].start_ns, before - 5000);
  EXPECT_LE(slices[0].end_ns(), after + 5000);
  EXPECT_GE(slices[0].duration_ns, 5'000'000);
  EXPECT_LT(slices[0].duration_ns, after - before + 5000);
}

TEST(Recorder, DynamicNamesArgumentsInstantsAndCounters) {
  const std::string path = Capture("dynamic", [] {
    for (int i = 0; i < 3; ++i) {
      std::string name = "dynamic_" + std::to_string(i);
      Trace t(name);
      t.AddArg("double", 2.5);
      t.AddArg("text", std::string("hello ") + std::to_string(i));
    }
    PODSCOPE_INSTANT("marker");
    for (int v = 0; v < 5; ++v) PODSCOPE_COUNTER("queue_depth", v * 10);
  });
  const auto file = ReadTraceFile(path);
  for (int i = 0; i < 3; ++i) {
    const auto slices = file.SlicesNamed("dynamic_" + std::to_string(i));
    ASSERT_EQ(slices.size(), 1u);
  }
  bool found_text = false, found_instant = false;
  for (const auto& t : file.tracks) {
    for (const auto& a : t.events.args) {
      for (const auto& arg : a.args) {
        if (file.Name(arg.key) == "text") {
          const auto text =
              file.Name(std::get<trace_format::StringId>(arg.value).id);
          EXPECT_EQ(text.rfind("hello ", 0), 0u);
          found_text = true;
        }
        if (file.Name(arg.key) == "double") {
          EXPECT_EQ(std::get<double>(arg.value), 2.5);
        }
      }
    }
    for (const auto& e : t.events.instants) {
      if (file.Name(e.name) == "marker") found_instant = true;
    }
  }
  EXPECT_TRUE(found_text);
  EXPECT_TRUE(found_instant);
  auto counters = file.TracksNamed("queue_depth");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0]->track.kind(), trace_format::proto::TRACK_KIND_COUNTER);
  ASSERT_EQ(counters[0]->events.counters.size(), 5u);
  for (int v = 0; v < 5; ++v) {
    EXPECT_EQ(counters[0]->events.counters[v].value, v * 10);
  }
}

TEST(Recorder, LevelsFilterAndSwitchAtRuntime) {
  TraceOptions options;
  options.level = Level::kInfo;
  const std::string path = Capture(
      "levels",
      [] {
        { PODSCOPE_TRACE_LEVEL(Level::kCritical, "critical"); }
        { PODSCOPE_TRACE_LEVEL(Level::kInfo, "info"); }
        { PODSCOPE_TRACE_LEVEL(Level::kVerbose, "verbose_hidden"); }
        SetLevel(Level::kVerbose);
        { PODSCOPE_TRACE_LEVEL(Level::kVerbose, "verbose_shown"); }
        SetLevel(Level::kCritical);
        { PODSCOPE_TRACE_LEVEL(Level::kInfo, "info_hidden"); }
      },
      options);
  const auto file = ReadTraceFile(path);
  EXPECT_EQ(file.SlicesNamed("critical").size(), 1u);
  EXPECT_EQ(file.SlicesNamed("info").size(), 1u);
  EXPECT_EQ(file.SlicesNamed("verbose_hidden").size(), 0u);
  EXPECT_EQ(file.SlicesNamed("verbose_shown").size(), 1u);
  EXPECT_EQ(file.SlicesNamed("info_hidden").size(), 0u);
}

TEST(Recorder, NothingIsRecordedWithoutASession) {
  { PODSCOPE_TRACE("before_session"); }
  const std::string path =
      Capture("no_session", [] { PODSCOPE_TRACE("inside"); });
  { PODSCOPE_TRACE("after_session"); }
  const auto file = ReadTraceFile(path);
  EXPECT_EQ(file.SlicesNamed("before_session").size(), 0u);
  EXPECT_EQ(file.SlicesNamed("inside").size(), 1u);
}

TEST(Recorder, FlowsLinkAHostLaunchToDeviceWork) {
  const TrackHandle stream =
      RegisterDeviceStreamTrack(3, 0, "device 3 stream 0");
  uint64_t flow = 0;
  const std::string path = Capture("flows", [&] {
    flow = NewFlowId();
    int64_t launched;
    {
      Trace t("launch");
      t.FlowOut(flow);
      launched = NowNs();
    }
    RecordSlice(stream, launched + 1000, launched + 50000, "kernel/matmul",
                flow, {{"flops", int64_t{1} << 20}});
  });
  const auto file = ReadTraceFile(path);
  auto device = file.TracksNamed("device 3 stream 0");
  ASSERT_EQ(device.size(), 1u);
  EXPECT_EQ(device[0]->track.kind(),
            trace_format::proto::TRACK_KIND_DEVICE_STREAM);
  EXPECT_EQ(device[0]->track.device_id(), 3);
  ASSERT_EQ(device[0]->events.slices.size(), 1u);
  ASSERT_EQ(device[0]->events.flows.size(), 1u);
  EXPECT_EQ(device[0]->events.flows[0].flow_id, flow);
  EXPECT_EQ(device[0]->events.flows[0].phase, trace_format::FlowPhase::kEnd);
  bool begin_found = false;
  for (const auto& t : file.tracks) {
    for (const auto& f : t.events.flows) {
      if (f.flow_id == flow && f.phase == trace_format::FlowPhase::kBegin) {
        begin_found = true;
        EXPECT_EQ(file.Name(t.events.slices[f.index].name), "launch");
      }
    }
  }
  EXPECT_TRUE(begin_found);
}

TEST(Recorder, ThreadsThatExitKeepTheirEvents) {
  const std::string path = Capture("exited", [] {
    for (int i = 0; i < 4; ++i) {
      std::thread([i] {
        SetThreadName("short-lived " + std::to_string(i));
        for (int k = 0; k < 100; ++k) PODSCOPE_TRACE("short_work");
      }).join();
    }
  });
  const auto file = ReadTraceFile(path);
  EXPECT_EQ(file.SlicesNamed("short_work").size(), 400u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(file.TracksNamed("short-lived " + std::to_string(i)).size(), 1u);
  }
}

TEST(Recorder, ArgumentsAreNotEvaluatedWhenNotRecording) {
  int evaluated = 0;
  auto costly = [&] {
    ++evaluated;
    return 1;
  };
  { PODSCOPE_TRACE("lazy", "value", costly()); }
  EXPECT_EQ(evaluated, 0);
  const std::string path =
      Capture("lazy", [&] { PODSCOPE_TRACE("lazy", "value", costly()); });
  EXPECT_EQ(evaluated, 1);
}

}  // namespace
}  // namespace podscope::profiler
