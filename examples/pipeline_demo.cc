// A small multi-threaded program that does real work (matrix products,
// prime sieving, sorting) in a step loop, profiled with Podscope: scopes
// with arguments on every thread, a flow from each dispatch on the main
// thread to the task it starts on a worker, and a queue-depth counter.
//
//   pipeline_demo DIR [--steps N] [--workers N]
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "podscope/profiler/recorder.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"

namespace {

double MatMul(int n, std::mt19937& rng) {
  std::vector<double> a(n * n), b(n * n), c(n * n, 0.0);
  {
    PODSCOPE_TRACE("init_matrices", "n", n);
    std::uniform_real_distribution<double> d(-1, 1);
    for (auto& x : a) x = d(rng);
    for (auto& x : b) x = d(rng);
  }
  PODSCOPE_TRACE("matmul_kernel", "flops", 2LL * n * n * n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < n; ++k) {
      const double aik = a[i * n + k];
      for (int j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
  }
  return c[0];
}

size_t Sieve(int limit) {
  PODSCOPE_TRACE("prime_sieve", "limit", limit);
  std::vector<bool> composite(limit + 1, false);
  size_t count = 0;
  for (int i = 2; i <= limit; ++i) {
    if (composite[i]) continue;
    ++count;
    for (int64_t j = int64_t{i} * i; j <= limit; j += i) composite[j] = true;
  }
  return count;
}

int64_t SortBatch(int n, std::mt19937& rng) {
  std::vector<int64_t> v(n);
  {
    PODSCOPE_TRACE("fill_batch", "n", n);
    for (auto& x : v) x = static_cast<int64_t>(rng());
  }
  PODSCOPE_TRACE("sort_batch", "n", n);
  std::sort(v.begin(), v.end());
  return v[n / 2];
}

struct Task {
  int kind;
  uint64_t flow;
};

// Tasks dispatched by the main thread and run by the workers, with a flow
// from each dispatch to its task.
class Pipeline {
 public:
  void StartWorkers(int workers) {
    for (int w = 0; w < workers; ++w) {
      threads_.emplace_back([this, w] { Work(w); });
    }
  }

  // One step: `count` tasks dispatched, then waits until the workers took
  // them all.
  void Step(int count) {
    namespace prof = podscope::profiler;
    for (int t = 0; t < count; ++t) {
      prof::Trace dispatch("dispatch");
      const uint64_t flow = prof::NewFlowId();
      dispatch.FlowOut(flow);
      dispatch.AddArg("kind", t % 3);
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({t % 3, flow});
      PODSCOPE_COUNTER("task queue depth", queue_.size());
      cv_.notify_one();
    }
    PODSCOPE_TRACE("wait_for_workers");
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (queue_.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // Lets the workers finish the queue and joins them; the sum of the
  // tasks' results.
  double Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    return checksum_;
  }

 private:
  void Work(int w) {
    namespace prof = podscope::profiler;
    prof::SetThreadName("worker " + std::to_string(w));
    std::mt19937 rng(w + 1);
    while (true) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = queue_.front();
        queue_.pop_front();
        PODSCOPE_COUNTER("task queue depth", queue_.size());
      }
      static const char* kNames[] = {"task_matmul", "task_sieve", "task_sort"};
      prof::Trace t(kNames[task.kind]);
      t.FlowIn(task.flow);
      double r = 0;
      if (task.kind == 0) r = MatMul(96, rng);
      if (task.kind == 1) r = static_cast<double>(Sieve(400000));
      if (task.kind == 2) r = static_cast<double>(SortBatch(60000, rng));
      std::lock_guard<std::mutex> lock(mu_);
      checksum_ += r;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool done_ = false;
  double checksum_ = 0;
  std::vector<std::thread> threads_;
};

// Reads --steps and --workers after DIR; an exit code when the program
// should stop (usage shown).
std::optional<int> ParseArgs(int argc, char** argv, int& steps, int& workers) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: pipeline_demo DIR [--steps N] [--workers N]\n");
    return argc < 2 ? 2 : 0;
  }
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "pipeline_demo: %s needs a value\n", argv[i]);
      return 2;
    }
    if (std::strcmp(argv[i], "--steps") == 0) {
      steps = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--workers") == 0) {
      workers = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "pipeline_demo: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (steps <= 0 || workers <= 0) {
    std::fprintf(stderr, "pipeline_demo: --steps and --workers must be > 0\n");
    return 2;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 20, workers = 3;
  if (std::optional<int> code = ParseArgs(argc, argv, steps, workers)) {
    return *code;
  }
  namespace prof = podscope::profiler;
  prof::TraceOptions options;
  options.sampling_hz = 997;  // CPU stack samples for flame graphs
  if (auto s = prof::StartTrace(argv[1], options); !s.ok()) {
    std::fprintf(stderr, "pipeline_demo: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  prof::SetThreadName("main");

  Pipeline pipeline;
  pipeline.StartWorkers(workers);
  for (int step = 0; step < steps; ++step) {
    PODSCOPE_STEP(step);
    pipeline.Step(workers * 2);
  }
  const double checksum = pipeline.Stop();
  auto path = prof::StopTrace();
  if (!path.ok()) {
    std::fprintf(stderr, "pipeline_demo: %s\n",
                 std::string(path.status().message()).c_str());
    return 1;
  }
  std::printf(
      "pipeline_demo: %d steps on %d workers (checksum %.3g), trace in %s\n",
      steps, workers, checksum, path->c_str());
  return 0;
}
