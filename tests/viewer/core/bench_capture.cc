#include "bench_capture.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"

namespace podscope::viewer::testing {
namespace {

namespace fs = std::filesystem;
namespace tf = podscope::trace_format;

constexpr int kFiles = 16;
constexpr int kThreadsPerFile = 4;

// One training-like step per iteration: step > 8 layers > 4 ops > 2
// kernels, 105 nested slices, on each of the file's threads.
absl::Status WriteHostFile(const std::string& path, int file, int files,
                           uint64_t events) {
  tf::WriterOptions options;
  options.compression_level = 1;
  auto w_or = tf::TraceWriter::Create(path, options);
  if (!w_or.ok()) return w_or.status();
  tf::TraceWriter& w = **w_or;
  tf::proto::Metadata m;
  m.set_host("host" + std::to_string(file));
  m.set_pid(1000 + file);
  m.set_process_index(file);
  m.set_process_count(files);
  w.SetMetadata(m);
  tf::proto::ClockOffset o;
  o.set_local_monotonic_ns(0);
  o.set_offset_ns(file * 1'000'003);
  o.set_reference("bench");
  w.AddClockOffset(o);
  o.set_local_monotonic_ns(int64_t{100} << 30);
  o.set_offset_ns(file * 1'000'003 + file * 50);
  w.AddClockOffset(o);
  const uint32_t step = w.InternString("train_step");
  std::vector<uint32_t> layer, op, kernel;
  for (int i = 0; i < 8; ++i)
    layer.push_back(w.InternString("layer" + std::to_string(i)));
  for (int i = 0; i < 4; ++i)
    op.push_back(w.InternString("op" + std::to_string(i)));
  for (int i = 0; i < 2; ++i)
    kernel.push_back(w.InternString("kernel" + std::to_string(i)));
  std::vector<uint32_t> tracks;
  for (int t = 0; t < kThreadsPerFile; ++t) {
    tf::proto::Track track;
    track.set_kind(tf::proto::TRACK_KIND_THREAD);
    track.set_name("worker " + std::to_string(t));
    tracks.push_back(w.AddTrack(track));
  }
  uint64_t x = 88172645463325252ull + file;
  auto jitter = [&](int64_t range) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return static_cast<int64_t>(x % static_cast<uint64_t>(range));
  };
  const uint64_t per_track = events / kThreadsPerFile;
  for (int t = 0; t < kThreadsPerFile; ++t) {
    int64_t now = 1'000'000 + t * 977;
    for (uint64_t done = 0; done + 105 <= per_track; done += 105) {
      const int64_t step_start = now;
      now += 500 + jitter(200);
      for (int l = 0; l < 8; ++l) {
        const int64_t layer_start = now;
        now += 100 + jitter(50);
        for (int k = 0; k < 4; ++k) {
          const int64_t op_start = now;
          now += 50 + jitter(20);
          for (int g = 0; g < 2; ++g) {
            const int64_t d = 200 + jitter(3000);
            w.AddSlice(tracks[t], now, d, kernel[g]);
            now += d + 20 + jitter(30);
          }
          w.AddSlice(tracks[t], op_start, now - op_start, op[k]);
          now += 30;
        }
        w.AddSlice(tracks[t], layer_start, now - layer_start, layer[l]);
        now += 40 + jitter(100);
      }
      w.AddSlice(tracks[t], step_start, now - step_start, step);
      now += 1000 + jitter(200'000);
    }
  }
  return w.Close();
}

// A capture left by an earlier run is reused only if every file is intact
// and decodes with this build's reader (a build with another chunk layout
// may have written it).
fs::path HostPath(const fs::path& dir, int f) {
  return dir / ("host" + std::to_string(f) + "." + std::to_string(1000 + f) +
                ".podtrace");
}

bool UsableCapture(const fs::path& dir, int files) {
  if (!fs::exists(dir / "complete")) return false;
  for (int f = 0; f < files; ++f) {
    auto reader = tf::TraceReader::Open(HostPath(dir, f).string());
    if (!reader.ok() || !(*reader)->report().intact() ||
        (*reader)->chunks().empty()) {
      return false;
    }
    const size_t last = (*reader)->chunks().size() - 1;
    if (!(*reader)->DecodeChunk(0).ok() || !(*reader)->DecodeChunk(last).ok()) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string EnsureHostsCapture(int files, uint64_t events,
                               const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") / name / "session";
  if (UsableCapture(dir, files)) return dir.string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::fprintf(stderr, "generating %llu events in %d files in %s ...\n",
               static_cast<unsigned long long>(events), files, dir.c_str());
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (int f; (f = next.fetch_add(1)) < files;) {
      if (!WriteHostFile(HostPath(dir, f).string(), f, files, events / files)
               .ok()) {
        failed = true;
      }
    }
  };
  std::thread other(work);
  work();
  other.join();
  if (failed) {
    std::fprintf(stderr, "could not write the capture\n");
    std::exit(1);
  }
  std::ofstream(dir / "complete") << "ok\n";
  return dir.string();
}

size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

std::string EnsureBenchCapture(uint64_t events) {
  return EnsureHostsCapture(kFiles, events,
                            "podscope_viewer_bench_" + std::to_string(events));
}

}  // namespace podscope::viewer::testing
