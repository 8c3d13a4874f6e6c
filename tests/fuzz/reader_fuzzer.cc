// libFuzzer target for the trace reader: arbitrary bytes go through
// everything a viewer or `podscope check` does with a file, which must
// never crash or trip a sanitizer, however damaged the file.
//
// Every input is read as it is and, when it differs, again with every
// record's CRC recomputed: random mutations almost never keep a CRC valid,
// so without the second pass the decoders behind the CRC check would hardly
// be reached.
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "podscope/trace_format/format.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/streamed_file.h"

namespace podscope::trace_format {
namespace {

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Rewrites the CRC of every record that the length fields chain together.
std::string FixCrcs(std::string file) {
  size_t pos = kFileHeaderSize;
  while (pos + kRecordHeaderSize <= file.size()) {
    const uint32_t length = GetU32(file.data() + pos);
    if (length > file.size() - pos - kRecordHeaderSize) break;
    uLong crc = crc32(0L, Z_NULL, 0);
    const auto* bytes = reinterpret_cast<const Bytef*>(file.data() + pos);
    crc = crc32(crc, bytes, 4);                           // length
    crc = crc32(crc, bytes + 8, 2);                       // type, encoding
    crc = crc32(crc, bytes + kRecordHeaderSize, length);  // payload
    for (int i = 0; i < 4; ++i) {
      file[pos + 4 + i] = static_cast<char>(crc >> (8 * i));
    }
    pos += kRecordHeaderSize + length;
  }
  return file;
}

// Touches a string so that a bad view would show up under ASan.
size_t Touch(std::string_view s) {
  size_t sum = s.size();
  for (char c : s) sum += static_cast<unsigned char>(c);
  return sum;
}

size_t TouchEvents(const TraceReader& reader, const TrackEvents& e) {
  size_t sum = 0;
  for (const Slice& s : e.slices) sum += Touch(reader.GetString(s.name));
  for (const Instant& i : e.instants) sum += Touch(reader.GetString(i.name));
  for (const StackSample& s : e.samples) {
    if (const proto::Stack* stack = reader.FindStack(s.stack)) {
      for (uint32_t frame_id : stack->frame_ids()) {
        if (const proto::Frame* f = reader.FindFrame(frame_id)) {
          sum += Touch(reader.GetString(f->function_name()));
          sum += Touch(reader.GetString(f->module_name()));
        }
      }
    }
  }
  for (const EventArgs& a : e.args) {
    const EventArgs* found = e.FindArgs(a.kind, a.index);
    if (found != nullptr) sum += found->args.size();
    for (const Arg& arg : a.args) {
      sum += Touch(reader.GetString(arg.key));
      if (const auto* id = std::get_if<StringId>(&arg.value)) {
        sum += Touch(reader.GetString(id->id));
      }
    }
  }
  for (const FlowLink& f : e.flows) sum += f.flow_id & 1;
  return sum;
}

// A broken promise of the reader: says which, then crashes for libFuzzer.
[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "reader_fuzzer: %s: %s\n", what, detail.c_str());
  std::abort();
}

void Exercise(const std::string& bytes, bool verify_all) {
  auto opened = TraceReader::OpenBuffer(bytes, "fuzz.podtrace",
                                        {.verify_all = verify_all});
  if (!opened.ok()) {
    if (opened.status().message().empty()) {
      Fail("an open error without a message", opened.status().ToString());
    }
    return;
  }
  const TraceReader& reader = **opened;
  size_t sum = Touch(reader.metadata().host()) + reader.total_dropped();
  for (const proto::Track& t : reader.tracks()) {
    sum += Touch(t.name());
    if (reader.FindTrack(t.id()) == nullptr) {
      Fail("a listed track is not found", std::to_string(t.id()));
    }
  }
  sum += reader.known_event_count() + reader.string_count();
  for (size_t i = 0; i < reader.chunks().size(); ++i) {
    auto decoded = reader.DecodeChunk(i);
    if (!decoded.ok()) continue;
    for (const TrackEvents& e : *decoded) sum += TouchEvents(reader, e);
  }
  // Merging and range queries do not depend on how the file was opened;
  // doing them once keeps the fuzzer fast.
  if (!verify_all) {
    bool queried = false;
    for (const TrackEvents& e : reader.ReadAllTracks(/*threads=*/1)) {
      sum += TouchEvents(reader, e);
      if (!queried && !e.slices.empty()) {
        // A range query over the first half of a track.
        queried = true;
        const int64_t t0 = e.slices.front().start_ns;
        const int64_t t1 = e.slices[e.slices.size() / 2].start_ns;
        sum += TouchEvents(reader, reader.ReadTrack(e.track_id, t0, t1));
      }
    }
  }
  const RecoveryReport report = reader.report();
  for (const SkippedRange& r : report.skipped) {
    // A skipped range must explain itself and lie within the file.
    if (r.reason.empty() || r.offset + r.bytes > bytes.size()) {
      Fail("a skipped range is unexplained or out of the file",
           std::to_string(r.offset) + "+" + std::to_string(r.bytes) + " of " +
               std::to_string(bytes.size()) + ": " + r.reason);
    }
    sum += r.bytes;
  }
  // A scan's CRC work is linear in the file (docs/trace-format.md).
  if (report.scan_crc_bytes > 3 * uint64_t{bytes.size()} + (1 << 20)) {
    Fail("the scan's CRC work exceeds its bound",
         std::to_string(report.scan_crc_bytes) + " bytes for a file of " +
             std::to_string(bytes.size()));
  }
  sum += Touch(report.index_problem) + report.skipped_bytes();
  // Keep the work from being optimised away.
  volatile size_t sink = sum;
  (void)sink;
}

// The same bytes as a capture stream arriving in two pieces: the stream
// assembler must reject or accept them without crashing. With
// `build_index`, the stream is taken as one that ended without an index on
// purpose: the index built from whatever records arrived must give a file
// that the reader opens.
void ExerciseStream(const std::string& bytes, bool build_index) {
  static const std::string path =
      std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
      "/podscope-fuzz-stream-" + std::to_string(getpid()) + ".podtrace";
  auto file = StreamedFile::Create(build_index ? path : "/dev/null");
  if (!file.ok()) return;
  const size_t half = bytes.size() / 2;
  if ((*file)->Append(std::string_view(bytes).substr(0, half)).ok() &&
      (*file)->Append(std::string_view(bytes).substr(half)).ok()) {
    proto::ClockRecord clock;
    clock.add_offsets()->set_offset_ns(1);
    (void)(*file)->AddRecord(RecordType::kClock, clock);
  }
  const bool finished = (*file)->Finish(build_index).ok();
  if (!build_index) return;
  if (finished && (*file)->complete()) {
    auto reader = TraceReader::Open(path);
    if (!reader.ok()) {
      std::fprintf(stderr,
                   "a streamed file with a built index does not open: %s\n",
                   std::string(reader.status().message()).c_str());
      std::abort();
    }
    (void)(*reader)->ReadAllTracks(1);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace podscope::trace_format

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podscope::trace_format;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  ExerciseStream(bytes, /*build_index=*/false);
  ExerciseStream(bytes, /*build_index=*/true);
  Exercise(bytes, /*verify_all=*/false);
  Exercise(bytes, /*verify_all=*/true);
  const std::string fixed = FixCrcs(bytes);
  if (fixed != bytes) {
    Exercise(fixed, false);
    Exercise(fixed, true);
  }
  return 0;
}
