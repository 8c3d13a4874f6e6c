// libFuzzer target for the XSpace importer: arbitrary bytes as a
// `.xplane.pb` must either be refused with an error or become a podtrace
// file that reads back whole; never a crash or a sanitizer report. Seeds
// (xspace_fuzz_seeds) are a JAX-like XSpace and one Podscope wrote, so both
// the foreign mapping and the restoring path are reached.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/writer.h"
#include "podscope/trace_format/xspace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podscope::trace_format;
  std::string file;
  auto writer = TraceWriter::Create(MakeStringSink(&file));
  if (!writer.ok()) return 0;
  XSpaceImportFacts facts;
  facts.source = "fuzz.xplane.pb";
  facts.host = "fuzz";
  auto stats = XSpaceToPodtrace(
      std::string_view(reinterpret_cast<const char*>(data), size), facts,
      **writer);
  if (!(*writer)->Close().ok()) __builtin_trap();
  if (!stats.ok()) return 0;
  // What was imported must read back as an intact file with every event.
  auto reader = TraceReader::OpenBuffer(std::move(file), "imported");
  if (!reader.ok()) __builtin_trap();
  uint64_t events = 0;
  for (const TrackEvents& t : (*reader)->ReadAllTracks(1)) {
    events += t.event_count();
  }
  if (events != stats->events || !(*reader)->report().intact()) {
    __builtin_trap();
  }
  return 0;
}
