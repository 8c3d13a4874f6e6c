#include "trace_fixtures.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <vector>

#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/writer.h"

namespace podscope::tools::testing {
namespace {

namespace fs = std::filesystem;
using trace_format::TraceWriter;
namespace proto = trace_format::proto;

void WriteBytes(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << file;
}

proto::Metadata MakeMetadata(const std::string& host, int64_t pid, int index,
                             int count) {
  proto::Metadata m;
  m.set_host(host);
  m.set_pid(pid);
  m.set_process_index(index);
  m.set_process_count(count);
  m.set_session_id("s1");
  m.add_command_line("train");
  m.add_command_line("--steps");
  m.add_command_line("3");
  m.set_producer("podscope tools test");
  return m;
}

proto::Track MakeTrack(proto::TrackKind kind, const std::string& name) {
  proto::Track t;
  t.set_kind(kind);
  t.set_name(name);
  return t;
}

void Check(const absl::Status& s) { ASSERT_TRUE(s.ok()) << s; }

void WriteHostA(const fs::path& file, bool clock_offsets) {
  auto created = TraceWriter::Create(file.string());
  ASSERT_TRUE(created.ok()) << created.status();
  TraceWriter& w = **created;
  w.SetMetadata(MakeMetadata("host-a", 100, 0, 2));
  proto::Track main_track = MakeTrack(proto::TRACK_KIND_THREAD, "main");
  main_track.set_tid(100);
  const uint32_t main = w.AddTrack(main_track);
  const uint32_t stream =
      w.AddTrack(MakeTrack(proto::TRACK_KIND_DEVICE_STREAM, "cpu:0/stream 0"));
  proto::Track memory_track = MakeTrack(proto::TRACK_KIND_COUNTER, "memory");
  memory_track.set_unit("bytes");
  const uint32_t memory = w.AddTrack(memory_track);
  if (clock_offsets) {
    proto::ClockOffset o;
    o.set_local_monotonic_ns(0);
    o.set_offset_ns(0);
    o.set_uncertainty_ns(1000);
    o.set_reference("client");
    w.AddClockOffset(o);
  }
  w.AddClockSnapshot(0, Capture::kRealtimeBase);
  w.SetDropCount(main, 7);
  const uint32_t step = w.InternString("step");
  const uint32_t forward = w.InternString("forward");
  const uint32_t matmul = w.InternString("matmul");
  const uint32_t backward = w.InternString("backward");
  const uint32_t checkpoint = w.InternString("checkpoint");
  const uint32_t kernel = w.InternString("kernel");
  for (int k = 0; k < 3; ++k) {
    const int64_t base = 1'000'000 + k * 1'000'000;
    // End order, as a recorder adds them: children before parents.
    w.AddSlice(main, base + 150'000, 100'000, matmul);
    w.AddSlice(main, base + 100'000, 300'000, forward);
    if (k == 2) Check(w.Flush());
    w.AddSlice(main, base + 500'000, 300'000, backward);
    w.AddSlice(main, base, 900'000, step);
    w.AddInstant(main, base + 950'000, checkpoint);
    w.AddSlice(stream, base + 200'000, 50'000, kernel);
    Check(w.Flush());
  }
  for (int i = 0; i < 5; ++i) {
    w.AddCounter(memory, 1'000'000 + i * 750'000, 1024.0 * i);
  }
  Check(w.Close());
}

void WriteHostB(const fs::path& file, bool clock_offsets) {
  auto created = TraceWriter::Create(file.string());
  ASSERT_TRUE(created.ok()) << created.status();
  TraceWriter& w = **created;
  w.SetMetadata(MakeMetadata("host-b", 200, 1, 2));
  proto::Track main_track = MakeTrack(proto::TRACK_KIND_THREAD, "main");
  main_track.set_tid(200);
  const uint32_t main = w.AddTrack(main_track);
  if (clock_offsets) {
    proto::ClockOffset o;
    o.set_local_monotonic_ns(50'000'000);
    o.set_offset_ns(-48'980'000);
    o.set_uncertainty_ns(2000);
    o.set_reference("client");
    w.AddClockOffset(o);
  }
  w.SetDropCount(main, 5);
  const uint32_t step = w.InternString("step");
  for (int k = 0; k < 3; ++k) {
    w.AddSlice(main, 50'000'000 + k * 1'000'000, 800'000, step);
  }
  Check(w.Close());
}

// Writes the 4-chunk file into memory; `unclosed` receives the bytes as they
// were before Close.
std::string BuildChunked(ChunkedFile* info, std::string* unclosed) {
  std::string data;
  auto created = TraceWriter::Create(trace_format::MakeStringSink(&data));
  EXPECT_TRUE(created.ok()) << created.status();
  TraceWriter& w = **created;
  proto::Metadata m;
  m.set_host("host-c");
  m.set_pid(300);
  m.set_process_index(-1);
  w.SetMetadata(m);
  const uint32_t main = w.AddTrack(MakeTrack(proto::TRACK_KIND_THREAD, "main"));
  const uint32_t tick = w.InternString("tick");
  for (int f = 0; f < 4; ++f) {
    for (int i = 0; i < 10; ++i) {
      w.AddSlice(main, f * 100'000 + i * 2'000, 1'000, tick);
    }
    EXPECT_TRUE(w.Flush().ok());
  }
  *unclosed = data;
  EXPECT_TRUE(w.Close().ok());
  info->closed_size = data.size();
  info->unclosed_size = unclosed->size();
  // Find where the chunks landed by scanning the records.
  trace_format::RecordScanner scanner(data);
  trace_format::RecordView record;
  int chunk = 0;
  while (scanner.Next(&record)) {
    if (record.type == trace_format::RecordType::kChunk && chunk < 4) {
      info->chunk_offset[chunk++] = record.offset;
    }
  }
  EXPECT_EQ(chunk, 4);
  return data;
}

}  // namespace

void WriteCapture(const fs::path& dir, bool clock_offsets) {
  fs::create_directories(dir);
  WriteHostA(dir / "host-a.100.podtrace", clock_offsets);
  WriteHostB(dir / "host-b.200.podtrace", clock_offsets);
}

ChunkedFile WriteChunked(const fs::path& file) {
  ChunkedFile info;
  std::string unclosed;
  WriteBytes(file, BuildChunked(&info, &unclosed));
  return info;
}

ChunkedFile WriteTorn(const fs::path& file) {
  ChunkedFile info;
  std::string unclosed;
  BuildChunked(&info, &unclosed);
  WriteBytes(file, unclosed.substr(0, info.chunk_offset[3] + 7));
  return info;
}

ChunkedFile WriteUnclosed(const fs::path& file) {
  ChunkedFile info;
  std::string unclosed;
  BuildChunked(&info, &unclosed);
  WriteBytes(file, unclosed);
  return info;
}

ChunkedFile WriteCorrupted(const fs::path& file) {
  ChunkedFile info;
  std::string unclosed;
  std::string data = BuildChunked(&info, &unclosed);
  data[info.chunk_offset[2] + trace_format::kRecordHeaderSize + 3] ^= 0x5a;
  WriteBytes(file, data);
  return info;
}

void WriteGarbage(const fs::path& file) {
  std::string text;
  for (int i = 0; i < 20; ++i) text += "this is not a trace file\n";
  WriteBytes(file, text);
}

void WriteNewerVersion(const fs::path& file) {
  std::string header = trace_format::EncodeFileHeader();
  header[8] = static_cast<char>(trace_format::kMajorVersion + 1);
  header[9] = 0;
  WriteBytes(file, header);
}

fs::path MakeTempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  fs::path dir = fs::path(base != nullptr ? base : fs::temp_directory_path()) /
                 ("podscope_tools_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace podscope::tools::testing
