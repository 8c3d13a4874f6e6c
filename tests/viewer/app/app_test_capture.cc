#include "app_test_capture.h"

#include <cstdlib>
#include <filesystem>
#include <random>
#include <vector>

#include "podscope/trace_format/writer.h"
#include "trace_gen.h"

namespace podscope::viewer::testing {
namespace {

namespace tf = trace_format;

const char* const kNames[] = {"train_step", "forward", "backward", "optimizer",
                              "load_batch", "matmul",  "conv",     "allreduce"};

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "test capture: %s failed\n", what);
    std::abort();
  }
}

}  // namespace

void WriteAppTestHost(const std::string& path, int host) {
  tf::WriterOptions options;
  options.chunk_events = 512;  // several chunks, so damage spares some
  auto writer = tf::TraceWriter::Create(path, options);
  Check(writer.ok(), "create");
  tf::TraceWriter& w = **writer;
  const std::string host_name = std::string("host") + char('A' + host);
  tf::proto::Metadata m;
  m.set_host(host_name);
  m.set_pid(100 + host);
  m.set_process_index(host);
  m.set_process_count(kCaptureHosts);
  w.SetMetadata(m);
  tf::proto::ClockOffset o;
  o.set_local_monotonic_ns(0);
  o.set_offset_ns(host * 1'000'000);
  o.set_reference("client");
  w.AddClockOffset(o);

  std::vector<uint32_t> names;
  for (const char* n : kNames) names.push_back(w.InternString(n));
  tf::proto::Track thread;
  thread.set_kind(tf::proto::TRACK_KIND_THREAD);
  thread.set_name("main");
  thread.set_tid(1000 + host);
  thread.set_sort_index(0);
  const uint32_t main_track = w.AddTrack(thread);
  tf::proto::Track stream;
  stream.set_kind(tf::proto::TRACK_KIND_DEVICE_STREAM);
  stream.set_name("device 0 stream");
  stream.set_device_id(host);
  stream.set_sort_index(1);
  const uint32_t stream_track = w.AddTrack(stream);
  tf::proto::Track counter;
  counter.set_kind(tf::proto::TRACK_KIND_COUNTER);
  counter.set_name("memory");
  counter.set_unit("bytes");
  counter.set_sort_index(2);
  const uint32_t counter_track = w.AddTrack(counter);

  // Random nested host slices over one second.
  std::mt19937_64 rng(1234 + host);
  std::vector<tf::Slice> slices =
      RandomNestedSlices(rng, 2500, 1'000'000'000, 8);
  std::vector<tf::EventRef> launches;
  for (const tf::Slice& s : slices) {
    tf::EventRef ref = w.AddSlice(main_track, s.start_ns, s.duration_ns,
                                  names[(s.name - 1) % names.size()]);
    // Outermost slices launch a kernel on the device.
    if (s.depth == 0 && s.duration_ns > 1000 && launches.size() < 40) {
      launches.push_back(ref);
      const uint64_t flow =
          (static_cast<uint64_t>(host) << 32) | launches.size();
      w.AddFlow(ref, flow, tf::FlowPhase::kBegin);
      const std::string kernel =
          std::string("layer") + char('0' + launches.size() % 4) + "/matmul";
      tf::EventRef k =
          w.AddSlice(stream_track, s.start_ns + s.duration_ns / 2,
                     s.duration_ns / 3 + 1, w.InternString(kernel));
      w.AddFlow(k, flow, tf::FlowPhase::kEnd);
    }
  }
  for (int i = 0; i < 200; ++i) {
    w.AddCounter(counter_track, i * 5'000'000,
                 1e6 * (1 + (i * (host + 3)) % 17));
  }
  // Stack samples: two stacks, leaf first.
  auto frame = [&](const char* name) {
    tf::proto::Frame f;
    f.set_function_name(w.InternString(name));
    return w.AddFrame(f);
  };
  const uint32_t f_main = frame("main"), f_train = frame("Train"),
                 f_gemm = frame("Gemm"), f_load = frame("LoadBatch");
  const uint32_t stack_gemm =
      w.AddStack(std::vector<uint32_t>{f_gemm, f_train, f_main});
  const uint32_t stack_load = w.AddStack(std::vector<uint32_t>{f_load, f_main});
  for (int i = 0; i < 300; ++i) {
    w.AddSample(main_track, 1'000'000 + i * 3'000'000,
                i % 3 == 0 ? stack_load : stack_gemm);
  }

  if (host == 0) {
    tf::proto::Track marks;
    marks.set_kind(tf::proto::TRACK_KIND_THREAD);
    marks.set_name("landmarks");
    marks.set_sort_index(3);
    const uint32_t marks_track = w.AddTrack(marks);
    const tf::Arg args[] = {
        {w.InternString("batch"), int64_t{42}},
        {w.InternString("phase"), tf::StringId{w.InternString("warmup")}},
        {w.InternString("lr"), 0.125}};
    w.AddSlice(marks_track, kLandmarkStart, kLandmarkDuration,
               w.InternString("landmark"), args);
    w.AddInstant(marks_track, kLandmarkStart + kLandmarkDuration + 50'000'000,
                 w.InternString("checkpoint"));
  }
  Check(w.Close().ok(), "close");
}

std::string WriteAppTestCapture(const std::string& dir) {
  const std::string session = dir + "/session";
  std::filesystem::create_directories(session);
  for (int h = 0; h < kCaptureHosts; ++h) {
    WriteAppTestHost(session + "/host" + char('A' + h) + "." +
                         std::to_string(100 + h) + ".podtrace",
                     h);
  }
  return session;
}

}  // namespace podscope::viewer::testing
