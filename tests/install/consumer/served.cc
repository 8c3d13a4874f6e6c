// Serves the profiler from an installed Podscope and records itself through
// its own server, as an embedding program with remote capture would.
#include <cstdio>
#include <filesystem>

#include "podscope/profiler/capture.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/trace.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto server = podscope::profiler::StartServer(0);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  podscope::profiler::CaptureOptions o;
  o.workers = {(*server)->address()};
  o.logdir = argv[1];
  o.session = "served";
  o.duration_ms = 100;
  auto result = podscope::profiler::CaptureWorkers(o);
  if (!result.ok() || result->answered() != 1) return 1;
  std::printf("captured %s\n",
              std::filesystem::path(result->session_dir).filename().c_str());
  return 0;
}
