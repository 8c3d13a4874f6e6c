// The multi-host clock scenario shared by the tests and `bench/run
// capture`: worker processes (tests/profiler/capture_worker.cc) on
// separate network hosts (namespaces joined to this one by veth pairs, when
// running as root) or on loopback, with clocks skewed by the test-only
// hook, marking shared instants while they are captured.
#ifndef PODSCOPE_TESTS_PROFILER_SKEWED_HOSTS_H_
#define PODSCOPE_TESTS_PROFILER_SKEWED_HOSTS_H_

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../common/netns.h"
#include "child_process.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/clock_model.h"
#include "trace_file.h"

namespace podscope::profiler::testing {

// Starts the worker binary (behind `prefix`, e.g. `ip netns exec NS`) and
// waits for its "port N" line; nullptr if it does not come.
inline std::unique_ptr<ChildProcess> StartCaptureWorker(
    const std::string& binary, const std::vector<std::string>& prefix,
    const std::vector<std::string>& args, const std::vector<std::string>& env,
    int* port) {
  std::vector<std::string> argv = prefix;
  argv.push_back(binary);
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = std::make_unique<ChildProcess>(argv, env);
  std::string line;
  if (!child->ReadLine(&line, 30000) || line.rfind("port ", 0) != 0)
    return nullptr;
  *port = std::atoi(line.c_str() + 5);
  return child;
}

// Starts the worker binary serving `servers` profiler servers of their
// own (capture_worker --servers, each recording a synthetic load) with
// `args` besides, and appends their loopback addresses to `addrs`; nullptr
// if they do not all come.
inline std::unique_ptr<ChildProcess> StartServerProcess(
    const std::string& binary, int servers,
    const std::vector<std::string>& args, std::vector<std::string>* addrs) {
  std::vector<std::string> argv = {binary, "--servers",
                                   std::to_string(servers)};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = std::make_unique<ChildProcess>(argv, std::vector<std::string>{});
  for (int i = 0; i < servers; ++i) {
    std::string line;
    if (!child->ReadLine(&line, 30000) || line.rfind("port ", 0) != 0) {
      return nullptr;
    }
    addrs->push_back("127.0.0.1:" + line.substr(5));
  }
  return child;
}

// Whether network namespaces can be made here (tests/common/netns.h).
inline bool CanMakeNamespaces() {
  return ::podscope::testing::NetworkNamespacesUnavailable().empty();
}

// `n` network namespaces, host i at 10.S.i.2 reachable from here through
// 10.S.i.1; removed on destruction.
class NetworkHosts {
 public:
  NetworkHosts(int n, const std::string& prefix) {
    const std::string tag = std::to_string(getpid() % 100000);
    subnet_ = 150 + getpid() % 100;
    for (int i = 1; i <= n; ++i) {
      const std::string ns =
          "podscope-" + prefix + tag + "-" + std::to_string(i);
      const std::string host_if = prefix + "h" + tag + "x" + std::to_string(i);
      const std::string ns_if = prefix + "n" + tag + "x" + std::to_string(i);
      const std::string net =
          "10." + std::to_string(subnet_) + "." + std::to_string(i);
      names_.push_back(ns);
      host_ifs_.push_back(host_if);
      const std::string in_ns = "; ip netns exec " + ns + " ";
      const std::string cmd =
          "set -e; ip netns add " + ns + "; ip link add " + host_if +
          " type veth peer name " + ns_if + "; ip link set " + ns_if +
          " netns " + ns + "; ip addr add " + net + ".1/24 dev " + host_if +
          "; ip link set " + host_if + " up" + in_ns + "ip addr add " + net +
          ".2/24 dev " + ns_if + in_ns + "ip link set " + ns_if + " up" +
          in_ns + "ip link set lo up";
      if (std::system(cmd.c_str()) != 0) {
        ok_ = false;
        return;
      }
    }
  }
  ~NetworkHosts() {
    for (size_t i = 0; i < names_.size(); ++i) {
      std::system(("ip link del " + host_ifs_[i] + " >/dev/null 2>&1").c_str());
      std::system(("ip netns del " + names_[i] + " >/dev/null 2>&1").c_str());
    }
  }
  NetworkHosts(const NetworkHosts&) = delete;
  NetworkHosts& operator=(const NetworkHosts&) = delete;

  bool ok() const { return ok_; }
  const std::string& name(int i) const { return names_[i]; }
  std::string address(int i) const {
    return "10." + std::to_string(subnet_) + "." + std::to_string(i + 1) + ".2";
  }

 private:
  bool ok_ = true;
  int subnet_ = 0;
  std::vector<std::string> names_, host_ifs_;
};

// A worker's reading of the real clock (CLOCK_MONOTONIC, the capture
// client's reference) just before and just after it recorded a mark.
struct Mark {
  int64_t before = 0;
  int64_t after = 0;
};

// Tells every worker to mark `count` instants, `spacing_ns` apart, from
// `first_ns`, and collects marks[worker][k].
inline std::vector<std::vector<Mark>> MarkInstants(
    const std::vector<std::unique_ptr<ChildProcess>>& workers, int64_t first_ns,
    int count, int64_t spacing_ns) {
  std::vector<std::vector<Mark>> marks(workers.size(),
                                       std::vector<Mark>(count));
  for (const auto& w : workers) {
    for (int k = 0; k < count; ++k) {
      w->WriteLine("mark " + std::to_string(first_ns + k * spacing_ns));
    }
  }
  for (size_t i = 0; i < workers.size(); ++i) {
    for (int k = 0; k < count; ++k) {
      std::string line;
      if (!workers[i]->ReadLine(&line, 5000)) break;
      long long a = 0, b = 0;
      std::sscanf(line.c_str(), "marked %lld %lld", &a, &b);
      marks[i][k] = {a, b};
    }
  }
  return marks;
}

// The "sync_mark" instants of a captured file, in order, mapped to the
// reference clock by the file's clock offsets.
inline std::vector<int64_t> AlignedMarks(const std::string& path) {
  TraceFile file = ReadTraceFile(path);
  std::vector<int64_t> out;
  if (file.reader == nullptr) return out;
  trace_format::ClockModel clock(file.reader->clock());
  for (const auto& t : file.tracks) {
    for (const auto& inst : t.events.instants) {
      if (file.Name(inst.name) == "sync_mark") out.push_back(inst.ts_ns);
    }
  }
  std::sort(out.begin(), out.end());
  for (int64_t& t : out) t = clock.ToReference(t);
  return out;
}

// How far an aligned mark lies outside the interval in which it happened.
inline int64_t AlignmentError(int64_t aligned, const Mark& m) {
  return std::max<int64_t>({m.before - aligned, aligned - m.after, 0});
}

}  // namespace podscope::profiler::testing

#endif  // PODSCOPE_TESTS_PROFILER_SKEWED_HOSTS_H_
