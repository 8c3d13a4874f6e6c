// libFuzzer target for the Chrome trace JSON / Kineto importer: arbitrary
// bytes are imported as a document. The importer must either fail with a
// message naming the input, or write a podtrace file that the reader opens
// and reads in full; it must never crash or trip a sanitizer.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "podscope/trace_format/chrome_import.h"
#include "podscope/trace_format/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podscope::trace_format;
  static const std::string path =
      std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
      "/podscope-fuzz-json-" + std::to_string(getpid()) + ".podtrace";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto imported = ImportChromeJsonBuffer(bytes, "fuzz.json", path);
  if (!imported.ok()) {
    if (imported.status().message().find("fuzz.json") == std::string::npos) {
      std::fprintf(stderr, "an import error that does not name the input: %s\n",
                   imported.status().ToString().c_str());
      std::abort();
    }
    std::remove(path.c_str());
    return 0;
  }
  auto reader = TraceReader::Open(path);
  if (!reader.ok()) {
    std::fprintf(stderr, "an imported file does not open: %s\n",
                 reader.status().ToString().c_str());
    std::abort();
  }
  uint64_t events = 0;
  for (const TrackEvents& e : (*reader)->ReadAllTracks(1)) {
    events += e.event_count();
    for (const Slice& s : e.slices)
      events += (*reader)->GetString(s.name).size();
  }
  if ((*reader)->known_event_count() != imported->events) {
    std::fprintf(
        stderr, "imported %llu events, the file holds %llu\n",
        static_cast<unsigned long long>(imported->events),
        static_cast<unsigned long long>((*reader)->known_event_count()));
    std::abort();
  }
  volatile uint64_t sink = events;
  (void)sink;
  std::remove(path.c_str());
  return 0;
}
