#include "synthetic_trace.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"

namespace podscope::bench {
namespace {

// A call tree shape: repeated iterations of a loop run the same few shapes,
// as a training step does, with different timing each time.
struct Node {
  uint32_t name;
  int64_t self_ns;  // typical time spent outside children
  std::vector<Node> children;
};

class Generator {
 public:
  Generator(const SyntheticOptions& o) : o_(o), rng_(o.seed) {}

  Node MakeShape(int depth, int max_depth) {
    Node n;
    n.name = Zipf();
    // Leaf work between 150 ns and 4 us, log-uniform.
    n.self_ns =
        static_cast<int64_t>(std::exp(std::uniform_real_distribution<double>(
            std::log(150.0), std::log(4000.0))(rng_)));
    if (depth < max_depth) {
      int kids =
          std::uniform_int_distribution<int>(0, depth == 1 ? 6 : 3)(rng_);
      for (int i = 0; i < kids; ++i) {
        n.children.push_back(MakeShape(depth + 1, max_depth));
      }
    }
    return n;
  }

  // Emits `n` starting at `t`, children first; returns its end.
  int64_t Emit(const Node& n, uint32_t thread, int64_t t,
               std::vector<SyntheticSlice>* out) {
    const int64_t start = t;
    t += Jitter(n.self_ns / 4 + 20);
    for (const Node& c : n.children) {
      t = Emit(c, thread, t, out);
      t += Jitter(60);
    }
    t += Jitter(n.self_ns);
    int64_t arg = -1;
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < o_.args_fraction) {
      // Sizes of tensors and transfers: a small multiple of a power of two.
      arg = std::uniform_int_distribution<int64_t>(1, 8)(rng_)
            << std::uniform_int_distribution<int>(6, 22)(rng_);
    }
    out->push_back({thread, start, t - start, n.name, arg});
    return t;
  }

  uint32_t Zipf() {
    // Names by a Zipf-like law: a few hot names, a long tail.
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    const double x = std::pow(static_cast<double>(o_.distinct_names), u) - 1;
    return static_cast<uint32_t>(std::min<double>(x, o_.distinct_names - 1));
  }

  int64_t Jitter(int64_t typical) {
    // Around `typical`, never negative: real timing noise is skewed.
    std::gamma_distribution<double> g(4.0, static_cast<double>(typical) / 4.0);
    return static_cast<int64_t>(g(rng_));
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  const SyntheticOptions& o_;
  std::mt19937_64 rng_;
};

size_t CountNodes(const Node& n) {
  size_t c = 1;
  for (const Node& k : n.children) c += CountNodes(k);
  return c;
}

}  // namespace

uint64_t SyntheticTrace::event_count() const {
  uint64_t n = 0;
  for (const auto& t : slices) n += t.size();
  for (const auto& c : counters) n += c.size();
  return n;
}

SyntheticTrace GenerateSyntheticTrace(const SyntheticOptions& o) {
  Generator gen(o);
  SyntheticTrace trace;
  for (int i = 0; i < o.distinct_names; ++i) {
    trace.names.push_back(absl::StrCat("op_", i % 7 == 0 ? "matmul_" : "",
                                       i % 5 == 0 ? "fused_" : "", "scope_",
                                       i));
  }
  // Each thread runs a loop over a handful of step shapes.
  trace.slices.resize(o.threads);
  std::vector<std::vector<Node>> shapes(o.threads);
  for (int t = 0; t < o.threads; ++t) {
    for (int s = 0; s < 6; ++s) {
      const int depth =
          std::uniform_int_distribution<int>(1, o.max_depth)(gen.rng());
      Node root = gen.MakeShape(1, depth);
      if (CountNodes(root) < 4) root = gen.MakeShape(1, o.max_depth);
      shapes[t].push_back(std::move(root));
    }
  }
  const uint64_t per_thread = o.events / o.threads + 1;
  for (int t = 0; t < o.threads; ++t) {
    int64_t now = o.start_ns + t * 1777;
    auto& out = trace.slices[t];
    out.reserve(per_thread + 64);
    while (out.size() < per_thread) {
      const Node& shape = shapes[t][std::uniform_int_distribution<size_t>(
          0, shapes[t].size() - 1)(gen.rng())];
      now = gen.Emit(shape, static_cast<uint32_t>(t), now, &out);
      now += gen.Jitter(300);
    }
  }
  // Two counters (memory in use, queue depth) across the whole span.
  int64_t end = o.start_ns;
  for (const auto& t : trace.slices) {
    for (const SyntheticSlice& s : t)
      end = std::max(end, s.start_ns + s.duration_ns);
  }
  const uint64_t samples = std::max<uint64_t>(
      1, o.events / std::max(1, o.slices_per_counter_sample) / 2);
  trace.counters.resize(2);
  double memory = 1 << 30;
  int64_t depth = 0;
  for (uint64_t i = 0; i < samples; ++i) {
    const int64_t ts =
        o.start_ns + static_cast<int64_t>((end - o.start_ns) * i / samples);
    memory = std::max(
        0.0, memory + std::normal_distribution<double>(0, 1 << 20)(gen.rng()));
    depth = std::max<int64_t>(
        0, depth + std::uniform_int_distribution<int>(-2, 2)(gen.rng()));
    trace.counters[0].push_back({ts, std::round(memory)});
    trace.counters[1].push_back({ts, static_cast<double>(depth)});
  }
  return trace;
}

void WriteSyntheticTrace(const SyntheticTrace& trace,
                         trace_format::TraceWriter* writer) {
  std::vector<uint32_t> name_ids;
  name_ids.reserve(trace.names.size());
  for (const std::string& n : trace.names) {
    name_ids.push_back(writer->InternString(n));
  }
  const uint32_t bytes_key = writer->InternString("bytes");
  std::vector<uint32_t> tracks;
  for (size_t t = 0; t < trace.slices.size(); ++t) {
    trace_format::proto::Track track;
    track.set_kind(trace_format::proto::TRACK_KIND_THREAD);
    track.set_name(absl::StrCat("worker ", t));
    track.set_tid(static_cast<int64_t>(10000 + t));
    tracks.push_back(writer->AddTrack(track));
  }
  const char* counter_names[] = {"memory in use", "queue depth"};
  const char* counter_units[] = {"bytes", ""};
  std::vector<uint32_t> counter_tracks;
  for (size_t c = 0; c < trace.counters.size(); ++c) {
    trace_format::proto::Track track;
    track.set_kind(trace_format::proto::TRACK_KIND_COUNTER);
    track.set_name(counter_names[c % 2]);
    track.set_unit(counter_units[c % 2]);
    counter_tracks.push_back(writer->AddTrack(track));
  }
  // Interleave threads in batches, as per-thread blocks reach a writer.
  constexpr size_t kBatch = 4096;
  std::vector<size_t> next(trace.slices.size(), 0);
  std::vector<size_t> next_counter(trace.counters.size(), 0);
  bool more = true;
  while (more) {
    more = false;
    for (size_t t = 0; t < trace.slices.size(); ++t) {
      const auto& slices = trace.slices[t];
      const size_t stop = std::min(slices.size(), next[t] + kBatch);
      for (size_t i = next[t]; i < stop; ++i) {
        const SyntheticSlice& s = slices[i];
        if (s.arg >= 0) {
          const trace_format::Arg arg{bytes_key, s.arg};
          writer->AddSlice(tracks[t], s.start_ns, s.duration_ns,
                           name_ids[s.name], {&arg, 1});
        } else {
          writer->AddSlice(tracks[t], s.start_ns, s.duration_ns,
                           name_ids[s.name]);
        }
      }
      next[t] = stop;
      more |= stop < slices.size();
    }
    for (size_t c = 0; c < trace.counters.size(); ++c) {
      const auto& samples = trace.counters[c];
      const size_t stop =
          std::min(samples.size(), next_counter[c] + kBatch / 16);
      for (size_t i = next_counter[c]; i < stop; ++i) {
        writer->AddCounter(counter_tracks[c], samples[i].ts_ns,
                           samples[i].value);
      }
      next_counter[c] = stop;
      more |= stop < samples.size();
    }
  }
}

absl::Status WriteSyntheticFile(const std::string& path,
                                const SyntheticOptions& options,
                                const std::string& host, int64_t pid,
                                const trace_format::WriterOptions& wo) {
  PODSCOPE_ASSIGN_OR_RETURN(auto writer,
                            trace_format::TraceWriter::Create(path, wo));
  trace_format::proto::Metadata m;
  m.set_host(host);
  m.set_pid(pid);
  m.set_producer("podscope synthetic trace");
  m.set_start_monotonic_ns(options.start_ns);
  writer->SetMetadata(m);
  WriteSyntheticTrace(GenerateSyntheticTrace(options), writer.get());
  return writer->Close();
}

}  // namespace podscope::bench
