// Writes a trace and reads it back through the installed library.
#include <cstdio>

#include "podscope/base/human_format.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  using namespace podscope::trace_format;
  auto writer = TraceWriter::Create(argv[1]);
  if (!writer.ok()) return 1;
  proto::Track track;
  track.set_name("main");
  const uint32_t id = (*writer)->AddTrack(track);
  (*writer)->AddSlice(id, 100, 50, (*writer)->InternString("hello"));
  if (!(*writer)->Close().ok()) return 1;
  auto reader = TraceReader::Open(argv[1]);
  if (!reader.ok()) return 1;
  TrackEvents events = (*reader)->ReadTrack(id);
  if (events.slices.size() != 1) return 1;
  if (podscope::base::FormatDuration(events.slices[0].duration_ns) != "50 ns") {
    return 1;
  }
  std::printf("%s %lld\n",
              std::string((*reader)->GetString(events.slices[0].name)).c_str(),
              static_cast<long long>(events.slices[0].duration_ns));
  return 0;
}
