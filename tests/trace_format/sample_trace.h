// A small trace that holds every record kind and every event kind, spread
// over several chunks. Used by the recovery tests and by the fuzzer's seed
// generator, so it must not depend on GoogleTest.
#ifndef PODSCOPE_TESTS_TRACE_FORMAT_SAMPLE_TRACE_H_
#define PODSCOPE_TESTS_TRACE_FORMAT_SAMPLE_TRACE_H_

#include <cstddef>
#include <string>

namespace podscope::trace_format::testing {

struct SampleTraceOptions {
  // Small, so that the events span many chunks.
  size_t chunk_events = 8;
  // False leaves the file as a writer that died after its last Flush would:
  // every record but no index and no trailer.
  bool close = true;
  int compression_level = 6;
};

// The bytes of the sample trace.
std::string WriteSampleTrace(const SampleTraceOptions& options = {});

// Re-frames every record of `file` with an uncompressed payload and fixes
// the index and trailer to match, so that a fuzzer mutating the result
// reaches the protobuf and column decoders instead of zlib's checks. The
// records of a damaged file are copied as they are.
std::string ReframeUncompressed(const std::string& file);

}  // namespace podscope::trace_format::testing

#endif  // PODSCOPE_TESTS_TRACE_FORMAT_SAMPLE_TRACE_H_
