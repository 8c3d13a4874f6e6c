#include "trace_gen.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "podscope/trace_format/chunk_codec.h"

namespace podscope::viewer::testing {
namespace tf = trace_format;

namespace {

void Fill(std::mt19937_64& rng, int64_t from, int64_t to, uint32_t depth,
          size_t* budget, uint32_t names, std::vector<tf::Slice>* out) {
  int64_t t = from;
  std::uniform_int_distribution<int> kind(0, 9);
  while (t<to&& * budget> 0) {
    // Gap, then a child of log-uniform length.
    const int64_t room = to - t;
    std::uniform_real_distribution<double> frac(0.0, 1.0);
    const int64_t gap =
        kind(rng) < 3 ? 0 : static_cast<int64_t>(room * std::pow(frac(rng), 6));
    t += gap;
    if (t > to) break;
    int64_t len;
    const int k = kind(rng);
    if (k == 0) {
      len = 0;
    } else {
      len = static_cast<int64_t>((to - t) * std::pow(frac(rng), 4));
    }
    tf::Slice s{t, len, 1 + static_cast<uint32_t>(rng() % names), depth};
    --*budget;
    out->push_back(s);
    if (len > 2 && depth < 12 && kind(rng) < 6) {
      Fill(rng, t, t + len, depth + 1, budget, names, out);
    }
    t += len;
    if (len == 0) t += 1 + static_cast<int64_t>(rng() % 3);
  }
}

}  // namespace

std::vector<tf::Slice> RandomNestedSlices(std::mt19937_64& rng,
                                          size_t approx_count, int64_t span,
                                          uint32_t names) {
  std::vector<tf::Slice> out;
  size_t budget = approx_count;
  Fill(rng, 0, span, 0, &budget, names, &out);
  std::stable_sort(out.begin(), out.end(), tf::SliceOrder);
  tf::ComputeSliceDepths(&out);
  return out;
}

std::vector<tf::Slice> RandomOverlappingSlices(std::mt19937_64& rng,
                                               size_t count, int64_t span,
                                               uint32_t names) {
  std::vector<tf::Slice> out;
  for (size_t i = 0; i < count; ++i) {
    const int64_t start = static_cast<int64_t>(rng() % span);
    const int64_t len =
        static_cast<int64_t>(rng() % (span / 8 + 1)) >> (rng() % 12);
    out.push_back({start, len, 1 + static_cast<uint32_t>(rng() % names), 0});
  }
  std::stable_sort(out.begin(), out.end(), tf::SliceOrder);
  tf::ComputeSliceDepths(&out);
  return out;
}

absl::Status WriteFile(const std::string& path, const FileSpec& spec) {
  tf::WriterOptions options;
  options.chunk_events = spec.chunk_events;
  options.compression_level = spec.compression_level;
  auto writer_or = tf::TraceWriter::Create(path, options);
  if (!writer_or.ok()) return writer_or.status();
  tf::TraceWriter& w = **writer_or;
  tf::proto::Metadata m;
  m.set_host(spec.host);
  m.set_pid(spec.pid);
  m.set_process_index(spec.process_index);
  m.set_process_count(spec.process_count);
  for (const std::string& arg : spec.command_line) m.add_command_line(arg);
  w.SetMetadata(m);
  for (const auto& [local, offset] : spec.offsets) {
    tf::proto::ClockOffset o;
    o.set_local_monotonic_ns(local);
    o.set_offset_ns(offset);
    o.set_reference("client");
    w.AddClockOffset(o);
  }
  std::vector<uint32_t> ids(spec.strings.size() + 1, 0);
  for (size_t i = 0; i < spec.strings.size(); ++i) {
    ids[i + 1] = w.InternString(spec.strings[i]);
  }
  std::vector<uint32_t> stack_ids;
  for (const auto& frames : spec.stacks) {
    std::vector<uint32_t> frame_ids;
    for (const std::string& f : frames) {
      tf::proto::Frame fr;
      fr.set_function_name(w.InternString(f));
      frame_ids.push_back(w.AddFrame(fr));
    }
    stack_ids.push_back(w.AddStack(frame_ids));
  }
  auto name = [&](uint32_t n) { return n < ids.size() ? ids[n] : 0; };
  // Each track's events as steps, written as the track is added or, all
  // tracks added, in turn.
  std::vector<std::vector<std::function<void()>>> steps(spec.tracks.size());
  std::vector<std::vector<tf::EventRef>> refs(spec.tracks.size());
  for (size_t k = 0; k < spec.tracks.size(); ++k) {
    const TrackSpec& t = spec.tracks[k];
    tf::proto::Track track;
    track.set_kind(t.kind);
    track.set_name(t.name);
    track.set_sort_index(t.sort_index);
    const uint32_t id = w.AddTrack(track);
    // End order (children before parents), as a recorder emits them.
    std::vector<uint32_t> order(t.slices.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const auto& x = t.slices[a];
      const auto& y = t.slices[b];
      if (x.end_ns() != y.end_ns()) return x.end_ns() < y.end_ns();
      return x.start_ns > y.start_ns;
    });
    refs[k].resize(t.slices.size());
    for (uint32_t i : order) {
      steps[k].push_back([&, k, id, i] {
        const auto& s = spec.tracks[k].slices[i];
        refs[k][i] = w.AddSlice(id, s.start_ns, s.duration_ns, name(s.name));
        for (const auto& [si, flow, phase] : spec.tracks[k].flows) {
          if (si == i) w.AddFlow(refs[k][i], flow, phase);
        }
      });
    }
    for (const auto& e : t.instants) {
      steps[k].push_back([&, id] { w.AddInstant(id, e.ts_ns, name(e.name)); });
    }
    for (const auto& c : t.counters) {
      steps[k].push_back([&, id] { w.AddCounter(id, c.ts_ns, c.value); });
    }
    for (const auto& sample : t.samples) {
      steps[k].push_back(
          [&, id] { w.AddSample(id, sample.first, stack_ids[sample.second]); });
    }
    if (!spec.interleave_tracks) {
      for (const auto& step : steps[k]) step();
    }
  }
  if (spec.interleave_tracks) {
    for (size_t i = 0, left = 1; left > 0; ++i) {
      left = 0;
      for (const auto& track : steps) {
        if (i < track.size()) track[i]();
        left += i + 1 < track.size();
      }
    }
  }
  return w.Close();
}

std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path p =
      std::filesystem::path(base ? base : "/tmp") /
      ("podscope_viewer_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

}  // namespace podscope::viewer::testing
