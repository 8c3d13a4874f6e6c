// A small multi-threaded program that does real work (matrix products,
// sorting, prime sieving) in a step loop and records its own timeline with
// the trace format library: nested scopes per thread, a flow from each
// dispatch on the main thread to the task it starts on a worker, task
// arguments, and a queue-depth counter. It writes one .podtrace file, as a
// profiled process does.
//
//   trace_writer_demo OUT.podtrace [--steps N] [--workers N]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "podscope/trace_format/writer.h"

namespace {

using Clock = std::chrono::steady_clock;
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

struct Event {
  int64_t start, end;
  const char* name;
  int64_t arg;        // < 0: none
  uint64_t flow_in;   // 0: none
  uint64_t flow_out;  // 0: none
};

// Each thread records into its own vector; the writer merges them at the end.
struct ThreadLog {
  std::string name;
  std::vector<Event> events;
};

class Scope {
 public:
  Scope(ThreadLog* log, const char* name, int64_t arg = -1,
        uint64_t flow_in = 0, uint64_t flow_out = 0)
      : log_(log), event_{NowNs(), 0, name, arg, flow_in, flow_out} {}
  ~Scope() {
    event_.end = NowNs();
    log_->events.push_back(event_);
  }

 private:
  ThreadLog* log_;
  Event event_;
};

double MatMul(ThreadLog* log, int n, std::mt19937& rng) {
  std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
  {
    Scope s(log, "init_matrices", n);
    std::uniform_real_distribution<double> d(-1, 1);
    for (auto& x : a) x = d(rng);
    for (auto& x : b) x = d(rng);
  }
  Scope s(log, "matmul_kernel", int64_t{n} * n * n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < n; ++k) {
      const double aik = a[i * n + k];
      for (int j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
  }
  return c[0];
}

size_t Sieve(ThreadLog* log, int limit) {
  Scope s(log, "prime_sieve", limit);
  std::vector<bool> composite(limit + 1, false);
  size_t count = 0;
  for (int i = 2; i <= limit; ++i) {
    if (composite[i]) continue;
    ++count;
    for (int64_t j = int64_t{i} * i; j <= limit; j += i) composite[j] = true;
  }
  return count;
}

int64_t SortBatch(ThreadLog* log, int n, std::mt19937& rng) {
  std::vector<int64_t> v(n);
  {
    Scope s(log, "fill_batch", n);
    for (auto& x : v) x = static_cast<int64_t>(rng());
  }
  Scope s(log, "sort_batch", n);
  std::sort(v.begin(), v.end());
  return v[n / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: trace_writer_demo OUT.podtrace [--steps N] "
                 "[--workers N]\n");
    return argc < 2 ? 2 : 0;
  }
  const std::string out = argv[1];
  int steps = 20, workers = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) {
      steps = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--workers") == 0) {
      workers = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "trace_writer_demo: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (steps <= 0 || workers <= 0) {
    std::fprintf(stderr, "trace_writer_demo: --steps and --workers must be > 0\n");
    return 2;
  }

  const int64_t start_ns = NowNs();
  const auto start_wall = std::chrono::system_clock::now();
  // A tiny task queue: the main thread dispatches, workers run.
  struct Task {
    int kind;
    uint64_t flow;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> queue;
  bool done = false;
  std::vector<std::pair<int64_t, double>> queue_depth;
  std::vector<ThreadLog> logs(workers + 1);
  logs[0].name = "main";
  std::atomic<double> checksum{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    logs[w + 1].name = "worker " + std::to_string(w);
    threads.emplace_back([&, w] {
      ThreadLog* log = &logs[w + 1];
      std::mt19937 rng(w + 1);
      while (true) {
        Task task;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return done || !queue.empty(); });
          if (queue.empty()) return;
          task = queue.front();
          queue.pop_front();
          queue_depth.push_back({NowNs(), static_cast<double>(queue.size())});
        }
        static const char* kNames[] = {"task_matmul", "task_sieve", "task_sort"};
        Scope s(log, kNames[task.kind], -1, task.flow, 0);
        double r = 0;
        if (task.kind == 0) r = MatMul(log, 96, rng);
        if (task.kind == 1) r = static_cast<double>(Sieve(log, 400000));
        if (task.kind == 2) r = static_cast<double>(SortBatch(log, 60000, rng));
        checksum = checksum + r;
      }
    });
  }

  uint64_t next_flow = 1;
  for (int step = 0; step < steps; ++step) {
    Scope s(&logs[0], "train_step", step);
    for (int t = 0; t < workers * 2; ++t) {
      const uint64_t flow = next_flow++;
      Scope d(&logs[0], "dispatch", t % 3, 0, flow);
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back({t % 3, flow});
      queue_depth.push_back({NowNs(), static_cast<double>(queue.size())});
      cv.notify_one();
    }
    Scope w(&logs[0], "wait_for_workers");
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (queue.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();

  using namespace podscope::trace_format;
  auto writer = TraceWriter::Create(out);
  if (!writer.ok()) {
    std::fprintf(stderr, "trace_writer_demo: %s\n",
                 std::string(writer.status().message()).c_str());
    return 1;
  }
  proto::Metadata m;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  m.set_host(host);
  m.set_pid(getpid());
  m.set_process_index(0);
  m.set_process_count(1);
  m.set_session_id("demo");
  for (int i = 0; i < argc; ++i) m.add_command_line(argv[i]);
  m.set_start_monotonic_ns(start_ns);
  m.set_start_realtime_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              start_wall.time_since_epoch())
                              .count());
  m.set_producer("podscope trace_writer_demo");
  (*m.mutable_capture_options())["steps"] = std::to_string(steps);
  (*m.mutable_capture_options())["workers"] = std::to_string(workers);
  (*writer)->SetMetadata(m);
  (*writer)->AddClockSnapshot(start_ns, m.start_realtime_ns());

  const uint32_t arg_key = (*writer)->InternString("n");
  for (size_t t = 0; t < logs.size(); ++t) {
    proto::Track track;
    track.set_kind(proto::TRACK_KIND_THREAD);
    track.set_name(logs[t].name);
    track.set_sort_index(static_cast<int>(t));
    const uint32_t id = (*writer)->AddTrack(track);
    for (const Event& e : logs[t].events) {
      const Arg arg{arg_key, e.arg};
      const uint32_t name = (*writer)->InternString(e.name);
      EventRef ref = e.arg >= 0 ? (*writer)->AddSlice(id, e.start,
                                                      e.end - e.start, name,
                                                      {&arg, 1})
                                : (*writer)->AddSlice(id, e.start,
                                                      e.end - e.start, name);
      if (e.flow_out) (*writer)->AddFlow(ref, e.flow_out, FlowPhase::kBegin);
      if (e.flow_in) (*writer)->AddFlow(ref, e.flow_in, FlowPhase::kEnd);
    }
  }
  proto::Track counter;
  counter.set_kind(proto::TRACK_KIND_COUNTER);
  counter.set_name("task queue depth");
  counter.set_unit("tasks");
  const uint32_t counter_id = (*writer)->AddTrack(counter);
  for (const auto& [ts, v] : queue_depth) {
    (*writer)->AddCounter(counter_id, ts, v);
  }
  if (auto s = (*writer)->Close(); !s.ok()) {
    std::fprintf(stderr, "trace_writer_demo: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  std::printf("trace_writer_demo: %d steps on %d workers (checksum %.3g), "
              "%llu events in %s (%llu bytes)\n",
              steps, workers, checksum.load(),
              static_cast<unsigned long long>((*writer)->stats().events),
              out.c_str(),
              static_cast<unsigned long long>((*writer)->stats().bytes));
  return 0;
}
