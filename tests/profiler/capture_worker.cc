// A worker process for the multi-process capture tests and benchmarks: it
// serves the profiler, keeps a thread recording scopes, and answers
// commands on stdin.
//
//   capture_worker [--port N] [--bind ADDR] [--token T] [--rate_hz R]
//                  [--capture_root DIR] [--step_ms MS] [--servers K]
//
// --servers K serves K profiler servers instead of one, each standing for
// a worker of its own: host "<host>-w<i>", and captures that record a
// synthetic load of --rate_hz scopes a second (synthetic_source.h) rather
// than this process's trace. One "port N" line is printed per server.
// --capture_root lets the server take worker-side captures; --step_ms
// makes the loop one numbered training step (PODSCOPE_STEP 0, 1, 2...)
// every MS milliseconds, each holding an "inner" scope, instead of the
// unnumbered "step" scopes.
//
// Prints "port N" once the server listens. Commands, one per line:
//   mark T   wait until CLOCK_MONOTONIC reaches T (ns), record the instant
//            "sync_mark", print "marked BEFORE AFTER" (CLOCK_MONOTONIC just
//            before and after recording it)
//   quit     exit (so does end of input)
// --rate_hz 0 records as fast as the thread can.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "podscope/profiler/clock.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/trace.h"
#include "synthetic_source.h"

namespace {

void SleepUntil(int64_t t_ns) {
  timespec ts;
  ts.tv_sec = t_ns / 1'000'000'000;
  ts.tv_nsec = t_ns % 1'000'000'000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace podscope::profiler;
  int port = 0;
  long rate_hz = 2000;
  long step_ms = 0;
  long servers = 0;
  ServerOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--port" && v) {
      port = std::atoi(v);
    } else if (a == "--bind" && v) {
      options.bind_address = v;
    } else if (a == "--token" && v) {
      options.token = v;
    } else if (a == "--rate_hz" && v) {
      rate_hz = std::atol(v);
    } else if (a == "--capture_root" && v) {
      options.capture_root = v;
    } else if (a == "--step_ms" && v) {
      step_ms = std::atol(v);
    } else if (a == "--servers" && v) {
      servers = std::atol(v);
    } else {
      std::fprintf(stderr, "capture_worker: bad argument '%s'\n", a.c_str());
      return 2;
    }
    ++i;
  }
  if (servers > 0) {
    // Many workers in one process: each server records its own source.
    char host[256] = "worker";
    gethostname(host, sizeof(host) - 1);
    std::vector<std::unique_ptr<ProfilerServer>> all;
    for (long i = 0; i < servers; ++i) {
      ServerOptions o = options;
      o.host_name = std::string(host) + "-w" + std::to_string(i);
      o.capture_source =
          std::make_shared<testing::SyntheticSource>(o.host_name, rate_hz);
      auto s = StartServer(0, o);
      if (!s.ok()) {
        std::fprintf(stderr, "capture_worker: %s\n",
                     std::string(s.status().message()).c_str());
        return 1;
      }
      std::printf("port %d\n", (*s)->port());
      all.push_back(std::move(*s));
    }
    std::fflush(stdout);
    std::string command;
    while (std::getline(std::cin, command) && command != "quit") {
    }
    for (auto& s : all) s->Stop();
    return 0;
  }
  auto server = StartServer(port, options);
  if (!server.ok()) {
    std::fprintf(stderr, "capture_worker: %s\n",
                 std::string(server.status().message()).c_str());
    return 1;
  }
  std::printf("port %d\n", (*server)->port());
  std::fflush(stdout);

  std::atomic<bool> stop{false};
  std::thread work([&] {
    SetThreadName("worker loop");
    const int64_t period = rate_hz > 0 ? 1'000'000'000 / rate_hz : 0;
    int64_t next = MonotonicNs();
    uint64_t i = 0;
    if (step_ms > 0) {
      int64_t step_end = MonotonicNs();
      for (int64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
        PODSCOPE_STEP(n);
        step_end += step_ms * 1'000'000;
        while (MonotonicNs() < step_end) {
          PODSCOPE_TRACE("inner");
          SleepUntil(std::min(step_end, MonotonicNs() + 1'000'000));
        }
      }
      return;
    }
    // Above 100 Hz the scopes come in bursts every 10 ms: one wake-up per
    // burst instead of one per scope, so that hundreds of workers on one
    // machine spend their time recording, not waking up.
    const long burst = rate_hz > 100 ? rate_hz / 100 : 1;
    const int64_t burst_period = period * burst;
    while (!stop.load(std::memory_order_relaxed)) {
      for (long k = 0; k < burst; ++k) {
        PODSCOPE_TRACE("step");
        PODSCOPE_TRACE("inner");
        ++i;
      }
      if (period > 0) {
        next += burst_period;
        const int64_t now = MonotonicNs();
        if (next < now - 100'000'000) next = now;  // fell far behind
        SleepUntil(next);
      }
    }
  });

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.rfind("mark ", 0) == 0) {
      const int64_t t = std::strtoll(line.c_str() + 5, nullptr, 10);
      SleepUntil(t - 2'000'000);
      int64_t before = MonotonicNs();
      while (before < t) before = MonotonicNs();
      PODSCOPE_INSTANT("sync_mark");
      const int64_t after = MonotonicNs();
      std::printf("marked %lld %lld\n", static_cast<long long>(before),
                  static_cast<long long>(after));
      std::fflush(stdout);
    } else if (line == "quit") {
      break;
    }
  }
  stop = true;
  work.join();
  (*server)->Stop();
  return 0;
}
