// A process that creates a runtime client while recording a trace, for
// trace_contract_test: argv[1] is the trace folder; prints the file's path.

#include <cstdio>

#include "podscope/profiler/session.h"
#include "podscope/runtime/pjrt/client.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE_DIR\n", argv[0]);
    return 2;
  }
  if (absl::Status s = podscope::profiler::StartTrace(argv[1]); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  auto client = podscope::runtime::CreateClient();
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  auto path = podscope::profiler::StopTrace();
  if (!path.ok()) {
    std::fprintf(stderr, "%s\n", path.status().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", path->c_str());
  return 0;
}
