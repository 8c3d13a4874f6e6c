// bench/run viewer, part open256: a session of 256 host files (training-like
// nested slices, 25.6 M events by default; --open256_events=N) opened as
// the desktop viewer opens it, one overview row per host
// (OpenOptions::detail_files = 64), against loading every event of it in
// the same run. Headlines:
//   viewer.open256_s             opening the overview
//   viewer.open256_rss_mib       memory the open overview holds (RSS)
//   viewer.open256_vs_full       its time over the full load's
//   viewer.open256_host_ms       loading one host's events when expanded
//   viewer.open256_overview_kib  what the overviews hold
//   viewer.open256_loaded_bytes_per_event   store bytes per loaded event
//                                after 8 hosts are expanded (beside the
//                                full load's, ..._full_bytes_per_event)
// Part open1024: a session of 1,024 host files of the same size per host
// (100 k events each, --open1024_events_per_host=N) written by the bench:
//   viewer.open1024_s            opening it as overview rows, each from its
//                                file's index (as the desktop viewer does)
//   analyze.peak_rss_mib_1024    the peak resident memory of the real
//                                `podscope analyze --json` of it, a child
//                                process (its ru_maxrss)
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "bench_capture.h"
#include "podscope/viewer/trace_store.h"

namespace {

using podscope::viewer::OpenOptions;
using podscope::viewer::TraceStore;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

// Runs `podscope analyze --json dir` (output discarded); its peak RSS in
// MiB and its wall time, or a negative peak when it failed.
std::pair<double, double> AnalyzePeak(const std::string& dir) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
    execl(PODSCOPE_BIN, PODSCOPE_BIN, "analyze", "--json", dir.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return {-1, Seconds(t0)};
  }
  return {static_cast<double>(usage.ru_maxrss) / 1024, Seconds(t0)};
}

int Open1024(uint64_t per_host) {
  constexpr int kHosts = 1024;
  const std::string dir = podscope::viewer::testing::EnsureHostsCapture(
      kHosts, per_host * kHosts,
      "podscope_viewer_open1024_" + std::to_string(per_host));
  OpenOptions options;
  options.detail_files = 64;
  options.overview_from_index = true;
  const auto t0 = std::chrono::steady_clock::now();
  auto store = TraceStore::Open(dir, options);
  const double open_s = Seconds(t0);
  if (!store.ok() || !(*store)->is_overview() ||
      (*store)->hosts().size() != kHosts) {
    std::fprintf(stderr, "the 1,024-host overview did not open\n");
    return 1;
  }
  const uint64_t events = (*store)->session_event_count();
  store->reset();
  const auto [peak_mib, analyze_s] = AnalyzePeak(dir);
  if (peak_mib < 0) {
    std::fprintf(stderr, "podscope analyze %s failed\n", dir.c_str());
    return 1;
  }
  std::fprintf(stderr,
               "1024 hosts, %llu events: overview rows in %.2f s; podscope "
               "analyze in %.1f s, peak %.0f MiB\n",
               static_cast<unsigned long long>(events), open_s, analyze_s,
               peak_mib);
  std::printf("viewer.open1024_s %.3f s\n", open_s);
  std::printf("analyze.peak_rss_mib_1024 %.1f MiB\n", peak_mib);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t events = 25'600'000;
  uint64_t per_host_1024 = 100'000;
  constexpr char kPerHost[] = "--open1024_events_per_host=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--open256_events=", 17) == 0) {
      events = std::strtoull(argv[i] + 17, nullptr, 10);
    }
    if (std::strncmp(argv[i], kPerHost, sizeof(kPerHost) - 1) == 0) {
      per_host_1024 =
          std::strtoull(argv[i] + sizeof(kPerHost) - 1, nullptr, 10);
    }
  }
  const std::string dir = podscope::viewer::testing::EnsureHostsCapture(
      256, events, "podscope_viewer_open256_" + std::to_string(events));
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  const size_t rss_before = podscope::viewer::testing::ResidentBytes();
  OpenOptions options;
  options.detail_files = 64;
  const auto t0 = std::chrono::steady_clock::now();
  auto store = TraceStore::Open(dir, options);
  const double open_s = Seconds(t0);
  if (!store.ok() || !(*store)->is_overview()) {
    std::fprintf(stderr, "the overview did not open\n");
    return 1;
  }
  const double rss_mib =
      (static_cast<double>(podscope::viewer::testing::ResidentBytes()) -
       static_cast<double>(rss_before)) /
      (1 << 20);
  TraceStore& s = **store;
  const size_t overview_bytes = s.resident_bytes();
  // One host expanded, then seven more.
  const auto t1 = std::chrono::steady_clock::now();
  if (!s.LoadDetail({0}).ok()) return 1;
  const double host_ms = Seconds(t1) * 1e3;
  if (!s.LoadDetail({1, 2, 3, 4, 5, 6, 7}).ok()) return 1;
  const double loaded_per_event =
      static_cast<double>(s.resident_bytes() - overview_bytes) /
      static_cast<double>(s.event_count());
  const uint64_t loaded = s.event_count();
  store->reset();
#if defined(__GLIBC__)
  malloc_trim(0);
#endif

  // The reference: every event of the session, as before.
  const auto t2 = std::chrono::steady_clock::now();
  auto full = TraceStore::Open(dir);
  const double full_s = Seconds(t2);
  if (!full.ok()) {
    std::fprintf(stderr, "open failed: %s\n",
                 std::string(full.status().message()).c_str());
    return 1;
  }
  const double full_per_event = static_cast<double>((*full)->resident_bytes()) /
                                static_cast<double>((*full)->event_count());
  std::fprintf(stderr,
               "256 hosts, %llu events: overview %.2f s (full load %.2f s, "
               "%.2f B/event); 8 hosts loaded: %llu events\n",
               static_cast<unsigned long long>((*full)->event_count()), open_s,
               full_s, full_per_event, static_cast<unsigned long long>(loaded));
  std::printf("viewer.open256_s %.3f s\n", open_s);
  std::printf("viewer.open256_rss_mib %.1f MiB\n", rss_mib);
  std::printf("viewer.open256_overview_kib %.1f KiB\n",
              static_cast<double>(overview_bytes) / 1024);
  std::printf("viewer.open256_vs_full %.3f ratio\n", open_s / full_s);
  std::printf("viewer.open256_host_ms %.1f ms\n", host_ms);
  std::printf("viewer.open256_loaded_bytes_per_event %.2f bytes/event\n",
              loaded_per_event);
  std::printf("viewer.open256_full_bytes_per_event %.2f bytes/event\n",
              full_per_event);
  full->reset();
  return Open1024(per_host_1024);
}
