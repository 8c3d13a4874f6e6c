// Writes the XSpace fuzzer's seed corpus into the folder given: a JAX-like
// XSpace for each host of the test fixture, and the XSpace Podscope exports
// from the sample trace (with its plane info).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/xspace.h"
#include "sample_trace.h"
#include "xspace_fixtures.h"

int main(int argc, char** argv) {
  namespace tf = podscope::trace_format;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
  };
  for (int h = 0; h < 2; ++h) {
    write("jax-" + std::to_string(h) + ".xplane.pb",
          tf::testing::JaxLikeXSpace(h).SerializeAsString());
  }
  auto reader =
      tf::TraceReader::OpenBuffer(tf::testing::WriteSampleTrace(), "sample");
  if (!reader.ok()) return 1;
  auto space = tf::ToXSpace(**reader);
  if (!space.ok()) return 1;
  write("podscope.xplane.pb", space->SerializeAsString());
  return 0;
}
