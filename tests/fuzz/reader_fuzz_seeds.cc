// Writes the reader fuzzer's seed corpus: small valid, unclosed, truncated
// and uncompressed trace files.
//
//   reader_fuzz_seeds OUT_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "podscope/trace_format/record_io.h"
#include "sample_trace.h"

namespace {

namespace fs = std::filesystem;
using podscope::trace_format::testing::ReframeUncompressed;
using podscope::trace_format::testing::SampleTraceOptions;
using podscope::trace_format::testing::WriteSampleTrace;

bool Write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  const std::string closed = WriteSampleTrace();
  const std::string unclosed = WriteSampleTrace({.close = false});
  const std::string one_chunk = WriteSampleTrace({.chunk_events = 1000});
  if (closed.empty() || unclosed.empty() || one_chunk.empty()) {
    std::fprintf(stderr, "cannot write the sample trace\n");
    return 1;
  }
  const struct {
    const char* name;
    std::string bytes;
  } seeds[] = {
      {"closed.podtrace", closed},
      {"unclosed.podtrace", unclosed},
      {"truncated.podtrace", closed.substr(0, closed.size() * 2 / 3)},
      {"one_chunk.podtrace", one_chunk},
      {"raw_closed.podtrace", ReframeUncompressed(closed)},
      {"raw_unclosed.podtrace", ReframeUncompressed(unclosed)},
      {"raw_one_chunk.podtrace", ReframeUncompressed(one_chunk)},
      {"header_only.podtrace", podscope::trace_format::EncodeFileHeader()},
  };
  for (const auto& seed : seeds) {
    if (!Write(dir / seed.name, seed.bytes)) return 1;
  }
  std::printf("wrote %zu seeds to %s\n", std::size(seeds), dir.c_str());
  return 0;
}
