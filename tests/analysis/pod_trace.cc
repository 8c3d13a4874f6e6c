#include "pod_trace.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

namespace podscope::analysis_testing {

namespace tf = trace_format;

absl::StatusOr<std::unique_ptr<RankTrace>> RankTrace::Create(
    const std::string& path, const std::string& host, int rank, int ranks,
    const std::map<std::string, std::string>& attributes) {
  auto w = tf::TraceWriter::Create(path, tf::WriterOptions{});
  if (!w.ok()) return w.status();
  tf::proto::Metadata m;
  m.set_host(host);
  m.set_pid(1000 + rank);
  m.set_process_index(rank);
  m.set_process_count(ranks);
  m.set_session_id("pod");
  for (const auto& [k, v] : attributes) (*m.mutable_attributes())[k] = v;
  (*w)->SetMetadata(m);
  return std::unique_ptr<RankTrace>(new RankTrace(std::move(*w)));
}

uint32_t RankTrace::Thread(const std::string& name) {
  tf::proto::Track t;
  t.set_kind(tf::proto::TRACK_KIND_THREAD);
  t.set_name(name);
  t.set_tid(tid_++);
  return w_->AddTrack(t);
}

uint32_t RankTrace::Device(const std::string& name, int32_t device_id,
                           int32_t stream_id) {
  tf::proto::Track t;
  t.set_kind(tf::proto::TRACK_KIND_DEVICE_STREAM);
  t.set_name(name);
  t.set_device_id(device_id);
  t.set_stream_id(stream_id);
  return w_->AddTrack(t);
}

uint32_t RankTrace::Counter(const std::string& name) {
  tf::proto::Track t;
  t.set_kind(tf::proto::TRACK_KIND_COUNTER);
  t.set_name(name);
  t.set_unit("bytes");
  return w_->AddTrack(t);
}

std::vector<tf::Arg> RankTrace::Convert(const Args& args) {
  std::vector<tf::Arg> out;
  for (const auto& [key, value] : args) {
    tf::Arg a;
    a.key = w_->InternString(key);
    if (const auto* s = std::get_if<std::string>(&value)) {
      a.value = tf::StringId{w_->InternString(*s)};
    } else if (const auto* i = std::get_if<int64_t>(&value)) {
      a.value = *i;
    } else {
      a.value = std::get<double>(value);
    }
    out.push_back(a);
  }
  return out;
}

void RankTrace::Slice(uint32_t track, int64_t start, int64_t duration,
                      const std::string& name, const Args& args, uint64_t flow,
                      trace_format::FlowPhase phase) {
  const auto a = Convert(args);
  const trace_format::EventRef ref =
      w_->AddSlice(track, start, duration, w_->InternString(name), a);
  if (flow != 0) w_->AddFlow(ref, flow, phase);
}

void RankTrace::Instant(uint32_t track, int64_t ts, const std::string& name,
                        const Args& args) {
  const auto a = Convert(args);
  w_->AddInstant(track, ts, w_->InternString(name), a);
}

void RankTrace::CounterValue(uint32_t track, int64_t ts, double v) {
  w_->AddCounter(track, ts, v);
}

absl::Status RankTrace::Close() { return w_->Close(); }

std::string FreshDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path p =
      base ? base : std::filesystem::temp_directory_path();
  p /= "podscope-analysis-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

// Three ranks, four steps; rank 2's `forward` takes 500 µs instead of
// 300 µs, so it reaches every all-reduce 200 µs after the others.
std::string WriteStragglerSession(const std::string& name) {
  const std::string dir = FreshDir(name);
  for (int r = 0; r < 3; ++r) {
    auto t = *RankTrace::Create(dir + "/rank" + std::to_string(r) + ".podtrace",
                                "host" + std::to_string(r), r, 3);
    const uint32_t main = t->Thread("main");
    const uint32_t dev = t->Device("device 0 (CPU) stream", r);
    const int64_t forward = r == 2 ? 500'000 : 300'000;
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t base = k * 1'000'000;
      t->Slice(main, base, 900'000, "train_step", {{"step", k}});
      t->Slice(main, base + 10'000, forward, "forward");
      t->Slice(main, base + 20'000 + forward, 10'000, "optimizer");
      const int64_t arrive = base + 20'000 + forward;
      const int64_t last = base + 520'000;
      t->Slice(dev, arrive, base + 600'000 - arrive, "AllReduce",
               {{"bytes", int64_t{4096}},
                {"wait_ns", last - arrive},
                {"collective_id", "grads#" + std::to_string(k)}});
    }
    if (!t->Close().ok()) return "";
  }
  return dir;
}

std::string WriteSynchronousJob(
    const std::string& name, int ranks, int steps, int per_step,
    const std::function<int64_t(int rank, int collective)>& compute_ns) {
  const std::string dir = FreshDir(name);
  const int total = steps * per_step;
  // arrive[k][r], and end[k] of every collective, on the job's clock.
  std::vector<std::vector<int64_t>> arrive(total, std::vector<int64_t>(ranks));
  std::vector<int64_t> end(total);
  int64_t previous_end = 1'000'000;
  for (int k = 0; k < total; ++k) {
    int64_t last = 0;
    for (int r = 0; r < ranks; ++r) {
      arrive[k][r] = previous_end + compute_ns(r, k);
      last = std::max(last, arrive[k][r]);
    }
    end[k] = last + 200'000;
    previous_end = end[k];
  }
  for (int r = 0; r < ranks; ++r) {
    auto t = RankTrace::Create(dir + "/rank" + std::to_string(r) + ".podtrace",
                               "host" + std::to_string(r), r, ranks);
    if (!t.ok()) return "";
    const uint32_t main = (*t)->Thread("main");
    const uint32_t dev = (*t)->Device("device 0 (CPU) stream", 0);
    for (int s = 0; s < steps; ++s) {
      const int first = s * per_step, last = first + per_step - 1;
      const int64_t start = first == 0 ? 1'000'000 : end[first - 1];
      (*t)->Slice(main, start, end[last] - start, "train_step",
                  {{"step", int64_t{s}}});
    }
    for (int k = 0; k < total; ++k) {
      int64_t last = 0;
      for (int q = 0; q < ranks; ++q) last = std::max(last, arrive[k][q]);
      (*t)->Slice(dev, arrive[k][r], end[k] - arrive[k][r], "all_reduce",
                  {{"wait_ns", last - arrive[k][r]},
                   {"collective_id", "world#" + std::to_string(k)}});
    }
    if (!(*t)->Close().ok()) return "";
  }
  return dir;
}

std::string WriteTrainingJob(const std::string& name,
                             const TrainingJobShape& shape) {
  const std::string dir = FreshDir(name);
  std::mt19937_64 rng(shape.seed);
  std::uniform_real_distribution<double> jitter(1 - shape.noise,
                                                1 + shape.noise);
  auto length = [&](int rank, int step, const std::string& op, double ns) {
    const double scale = shape.scale ? shape.scale(rank, step, op) : 1.0;
    return static_cast<int64_t>(ns * scale * jitter(rng));
  };
  std::vector<std::unique_ptr<RankTrace>> traces;
  std::vector<uint32_t> main, dev;
  for (int r = 0; r < shape.ranks; ++r) {
    auto t = RankTrace::Create(dir + "/rank" + std::to_string(r) + ".podtrace",
                               "host" + std::to_string(r), r, shape.ranks);
    if (!t.ok()) return "";
    main.push_back((*t)->Thread("main"));
    dev.push_back((*t)->Device("device 0 (CPU) stream", 0));
    traces.push_back(std::move(*t));
  }
  int64_t start = 1'000'000;
  for (int s = 0; s < shape.steps; ++s) {
    std::vector<int64_t> arrive(shape.ranks);
    for (int r = 0; r < shape.ranks; ++r) {
      RankTrace& t = *traces[r];
      int64_t at = start;
      auto compile = [&](const std::string& signature) {
        t.Slice(main[r], at, 5'000'000, "Compile",
                {{"graph_hash", signature == "f32[32,784]" ? "a1" : "b2"},
                 {"cache_hit", int64_t{0}},
                 {"signature", signature}});
        at += 5'000'000;
      };
      if (s == 0) compile("f32[32,784]");
      if (s == shape.recompile_at) compile("f32[17,784]");
      if (!shape.extra_scope.empty()) {
        t.Slice(main[r], at, 100'000, shape.extra_scope);
        at += 100'000;
      }
      const int64_t loader = length(r, s, "loader_next", 500'000);
      t.Slice(main[r], at, loader, "loader_next");
      at += loader;
      const int64_t conv = length(r, s, "conv2d", 2'000'000);
      const int64_t matmul = length(r, s, "matmul", 1'000'000);
      t.Slice(main[r], at, conv + matmul, "forward");
      t.Slice(dev[r], at, conv, "conv2d");
      t.Slice(dev[r], at + conv, matmul, "matmul");
      arrive[r] = at + conv + matmul;
    }
    const int64_t end =
        *std::max_element(arrive.begin(), arrive.end()) + 200'000;
    for (int r = 0; r < shape.ranks; ++r) {
      traces[r]->Slice(dev[r], arrive[r], end - arrive[r], "all_reduce",
                       {{"wait_ns", end - 200'000 - arrive[r]},
                        {"collective_id", "world#" + std::to_string(s)}});
      traces[r]->Slice(main[r], start, end - start, "train_step",
                       {{"step", int64_t{s}}});
    }
    start = end;
  }
  for (auto& t : traces) {
    if (!t->Close().ok()) return "";
  }
  return dir;
}

std::string WriteLowPeakSession(const std::string& name) {
  const std::string dir = FreshDir(name);
  auto created = RankTrace::Create(dir + "/rank0.podtrace", "host0", 0, 1,
                                   {{"machine.peak_gflops", "10"},
                                    {"machine.peak_gbps", "1"},
                                    {"machine.peak_source", "cached"}});
  if (!created.ok()) return "";
  RankTrace& t = **created;
  const uint32_t dev = t.Device("device 0 (CPU) stream", 0);
  t.Slice(dev, 0, 100'000, "dense/dot",
          {{"flops", int64_t{2'000'000}},
           {"bytes_accessed", int64_t{100'000}},
           {"op", "dot"}});
  t.Slice(dev, 500'000, 10'000, "relu/fusion",
          {{"flops", int64_t{10'000}},
           {"bytes_accessed", int64_t{40'000}},
           {"op", "fusion"}});
  return t.Close().ok() ? dir : "";
}

}  // namespace podscope::analysis_testing
