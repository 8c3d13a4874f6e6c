#include "rank_test_capture.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "podscope/trace_format/writer.h"

namespace podscope::viewer::testing {
namespace {

namespace tf = trace_format;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "rank test capture: %s failed\n", what);
    std::abort();
  }
}

void WriteRank(const std::string& path, int rank, int ranks, int steps) {
  auto writer = tf::TraceWriter::Create(path, {});
  Check(writer.ok(), "create");
  tf::TraceWriter& w = **writer;
  const int pid = 200 + rank;
  tf::proto::Metadata m;
  m.set_host("vm");
  m.set_pid(pid);
  m.set_process_index(rank);
  m.set_process_count(ranks);
  w.SetMetadata(m);
  tf::proto::ClockOffset o;
  o.set_local_monotonic_ns(0);
  o.set_offset_ns(0);
  o.set_reference("client");
  w.AddClockOffset(o);

  auto track = [&](tf::proto::TrackKind kind, const char* name, int64_t tid,
                   int sort) {
    tf::proto::Track t;
    t.set_kind(kind);
    t.set_name(name);
    t.set_tid(tid);
    t.set_sort_index(sort);
    if (kind == tf::proto::TRACK_KIND_DEVICE_STREAM) t.set_device_id(rank);
    if (kind == tf::proto::TRACK_KIND_COUNTER) t.set_unit("bytes");
    return w.AddTrack(t);
  };
  const uint32_t main = track(tf::proto::TRACK_KIND_THREAD, "main", pid, 0);
  const uint32_t loader =
      track(tf::proto::TRACK_KIND_THREAD, "loader", pid + 1, 1);
  const uint32_t stream =
      track(tf::proto::TRACK_KIND_DEVICE_STREAM, "device 0 stream", 0, 2);
  const uint32_t counters[] = {
      track(tf::proto::TRACK_KIND_COUNTER, "host memory", 0, 3),
      track(tf::proto::TRACK_KIND_COUNTER, "device memory", 0, 4),
      track(tf::proto::TRACK_KIND_COUNTER, "queue depth", 0, 5)};

  const uint32_t step_name = w.InternString("train_step");
  const uint32_t forward = w.InternString("forward");
  const uint32_t backward = w.InternString("backward");
  const uint32_t optimizer = w.InternString("optimizer_step");
  const uint32_t matmul = w.InternString("matmul");
  const uint32_t launch = w.InternString("launch");
  const uint32_t load = w.InternString("loader_prepare");
  const uint32_t step_key = w.InternString("step");
  uint64_t flow = 1;
  for (int k = 0; k < steps; ++k) {
    const int64_t t = RankStepStart(rank, k);
    const tf::Arg args[] = {{step_key, int64_t{k}}};
    w.AddSlice(main, t, kRankStepSlice, step_name, args);
    w.AddSlice(main, t + 1'000'000, 5'000'000, forward);
    w.AddSlice(main, t + 6'000'000, 5'000'000, backward);
    // Short, nested and named like a step: a step only to a loose match.
    w.AddSlice(main, t + 10'000'000, 280'000, optimizer);
    // Levels below, as a real trace has.
    w.AddSlice(main, t + 1'500'000, 2'000'000, launch);
    const tf::EventRef origin =
        w.AddSlice(main, t + 1'600'000, 500'000, launch);
    w.AddFlow(origin, flow, tf::FlowPhase::kBegin);
    const tf::EventRef kernel =
        w.AddSlice(stream, t + 2'000'000, kRankStepWindow - 2'000'000, matmul);
    w.AddFlow(kernel, flow, tf::FlowPhase::kEnd);
    ++flow;
    w.AddSlice(loader, t + 12'000'000, 3'000'000, load);
  }
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < steps * 2; ++k) {
      w.AddCounter(counters[i], RankStepStart(rank, 0) + k * 10'000'000,
                   1e6 * (1 + (k + i) % 5));
    }
  }
  Check(w.Close().ok(), "close");
}

}  // namespace

std::string WriteRankSession(const std::string& dir, int ranks, int steps) {
  const std::string session = dir + "/ranks" + std::to_string(ranks);
  std::filesystem::create_directories(session);
  for (int r = 0; r < ranks; ++r) {
    WriteRank(session + "/vm." + std::to_string(200 + r) + ".podtrace", r,
              ranks, steps);
  }
  return session;
}

}  // namespace podscope::viewer::testing
