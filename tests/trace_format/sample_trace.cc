#include "sample_trace.h"

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trailer.h"
#include "podscope/trace_format/writer.h"

namespace podscope::trace_format::testing {

std::string WriteSampleTrace(const SampleTraceOptions& options) {
  std::string data;
  WriterOptions wo;
  wo.chunk_events = options.chunk_events;
  wo.compression_level = options.compression_level;
  auto created = TraceWriter::Create(MakeStringSink(&data), wo);
  if (!created.ok()) return {};
  TraceWriter& w = **created;

  proto::Metadata m;
  m.set_host("sample-host");
  m.set_pid(4242);
  m.set_process_index(-1);
  w.SetMetadata(m);

  proto::Track t;
  t.set_kind(proto::TRACK_KIND_THREAD);
  t.set_name("main \"thread\"");
  t.set_tid(4242);
  const uint32_t main_track = w.AddTrack(t);
  t.set_name("worker");
  t.set_tid(4243);
  const uint32_t worker = w.AddTrack(t);
  proto::Track stream;
  stream.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
  stream.set_name("cpu:0 stream 0");
  stream.set_device_id(0);
  stream.set_stream_id(0);
  const uint32_t device = w.AddTrack(stream);
  proto::Track counter;
  counter.set_kind(proto::TRACK_KIND_COUNTER);
  counter.set_name("memory");
  counter.set_unit("bytes");
  const uint32_t memory = w.AddTrack(counter);

  proto::Frame f;
  f.set_function_name(w.InternString("main"));
  f.set_module_name(w.InternString("sample"));
  f.set_module_offset(0x1000);
  const uint32_t frame_main = w.AddFrame(f);
  f.set_function_name(w.InternString("Compute(int)"));
  f.set_module_offset(0x1400);
  f.set_line(17);
  const uint32_t frame_compute = w.AddFrame(f);
  const uint32_t leaf_first[] = {frame_compute, frame_main};
  const uint32_t stack = w.AddStack(leaf_first);

  w.AddClockSnapshot(1'000, 1'700'000'000'000'001'000);
  proto::ClockOffset offset;
  offset.set_local_monotonic_ns(1'000);
  offset.set_offset_ns(250);
  offset.set_uncertainty_ns(20);
  offset.set_reference("client");
  w.AddClockOffset(offset);

  const uint32_t step = w.InternString("step");
  const uint32_t forward = w.InternString("forward");
  const uint32_t matmul = w.InternString("matmul \xE2\x88\x91");
  const uint32_t mark = w.InternString("mark");
  const uint32_t key = w.InternString("batch");
  const uint32_t kernel = w.InternString("kernel");
  uint64_t next_flow = 1;

  for (int i = 0; i < 6; ++i) {
    const int64_t base = 10'000 * (i + 1);
    // End order, as a recorder produces: children first.
    const Arg args[] = {{key, int64_t{i}},
                        {w.InternString("ratio"), 0.25 * i},
                        {w.InternString("phase"), StringId{forward}}};
    EventRef ref = w.AddSlice(main_track, base + 100, 500, matmul, args);
    w.AddFlow(ref, next_flow, FlowPhase::kBegin);
    w.AddSlice(main_track, base + 50, 900, forward);
    w.AddSlice(main_track, base, 2'000, step);
    ref = w.AddSlice(device, base + 700, 300, kernel);
    w.AddFlow(ref, next_flow, FlowPhase::kEnd);
    ++next_flow;
    ref = w.AddInstant(worker, base + 10, mark, args);
    w.AddFlow(ref, 1'000 + i, FlowPhase::kStep);
    // Overlapping slices on the worker: the flat encoding.
    w.AddSlice(worker, base + 20, 300, step);
    w.AddSlice(worker, base + 120, 400, forward);
    w.AddCounter(memory, base, (i % 2 == 0) ? 1'000.0 * i : 0.5 + i);
    w.AddSample(main_track, base + 150, stack);
    if (i == 2) {
      w.SetDropCount(worker, 3);
      if (!w.Flush().ok()) return {};
      // Facts learned mid-capture: a later record replaces the metadata,
      // new strings, a second clock record.
      m.set_process_index(1);
      m.set_process_count(2);
      w.SetMetadata(m);
      w.InternString("late string");
      offset.set_local_monotonic_ns(40'000);
      offset.set_offset_ns(260);
      w.AddClockOffset(offset);
    }
  }
  w.AddCounter(memory, 90'000, std::numeric_limits<double>::quiet_NaN());
  w.SetDropCount(worker, 5);
  if (!w.Flush().ok()) return {};
  if (!options.close) return data;  // the writer "dies" here
  if (!w.Close().ok()) return {};
  return data;
}

std::string ReframeUncompressed(const std::string& file) {
  if (!CheckFileHeader(file, "sample").ok()) return file;
  std::string out = file.substr(0, kFileHeaderSize);
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> moved;  // old -> new, len
  std::string index_payload;
  RecordScanner scanner(file);
  RecordView record;
  while (scanner.Next(&record)) {
    if (record.type == RecordType::kTrailer) continue;
    auto payload = DecodePayload(record);
    if (!payload.ok()) continue;
    if (record.type == RecordType::kIndex) {
      index_payload = *payload;
      continue;
    }
    const std::string framed =
        EncodeRecord(record.type, RecordEncoding::kRaw, *payload);
    moved[record.offset] = {out.size(), framed.size()};
    out += framed;
  }
  proto::Index index;
  if (index_payload.empty() || !index.ParseFromString(index_payload)) {
    return out;
  }
  for (proto::ChunkEntry& c : *index.mutable_chunks()) {
    auto it = moved.find(c.offset());
    if (it == moved.end()) continue;
    c.set_offset(it->second.first);
    c.set_length(it->second.second);
  }
  for (proto::RecordEntry& r : *index.mutable_records()) {
    auto it = moved.find(r.offset());
    if (it == moved.end()) continue;
    r.set_offset(it->second.first);
    r.set_length(it->second.second);
  }
  const uint64_t index_offset = out.size();
  out += EncodeRecord(RecordType::kIndex, RecordEncoding::kRaw,
                      index.SerializeAsString());
  Trailer{index_offset}.EncodeTo(&out);
  return out;
}

}  // namespace podscope::trace_format::testing
