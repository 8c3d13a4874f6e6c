#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <variant>

#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trailer.h"

namespace podscope::trace_format::testing {
namespace {

const char* KindName(FlatKind kind) {
  switch (kind) {
    case FlatKind::kSlice:
      return "slice";
    case FlatKind::kInstant:
      return "instant";
    case FlatKind::kCounter:
      return "counter";
    case FlatKind::kSample:
      return "sample";
  }
  return "?";
}

std::vector<std::string> DescribeArgs(std::span<const Arg> args) {
  std::vector<std::string> out;
  for (const Arg& a : args) out.push_back(DescribeArg(a));
  return out;
}

FlatEvent FlatSlice(uint32_t track, const Slice& s) {
  FlatEvent e;
  e.track = track;
  e.kind = FlatKind::kSlice;
  e.ts = s.start_ns;
  e.duration = s.duration_ns;
  e.id = s.name;
  return e;
}

FlatEvent FlatInstant(uint32_t track, const Instant& i) {
  FlatEvent e;
  e.track = track;
  e.kind = FlatKind::kInstant;
  e.ts = i.ts_ns;
  e.id = i.name;
  return e;
}

bool Overlaps(const FlatEvent& e, int64_t t0, int64_t t1) {
  const int64_t end = e.kind == FlatKind::kSlice ? e.ts + e.duration : e.ts;
  return end >= t0 && e.ts <= t1;
}

}  // namespace

void PrintTo(const FlatEvent& e, std::ostream* os) {
  *os << "{track " << e.track << " " << KindName(e.kind) << " ts " << e.ts;
  if (e.kind == FlatKind::kSlice) *os << " dur " << e.duration;
  if (e.kind == FlatKind::kCounter) {
    *os << " value " << std::bit_cast<double>(e.value_bits);
  } else {
    *os << " id " << e.id;
  }
  for (const std::string& a : e.args) *os << " " << a;
  for (const auto& [id, phase] : e.flows) {
    *os << " flow " << id << "/" << phase;
  }
  *os << "}";
}

std::string DescribeArg(const Arg& arg) {
  std::string out = std::to_string(arg.key) + "=";
  if (const auto* i = std::get_if<int64_t>(&arg.value)) {
    return out + "i:" + std::to_string(*i);
  }
  if (const auto* d = std::get_if<double>(&arg.value)) {
    return out + "d:" + std::to_string(std::bit_cast<uint64_t>(*d));
  }
  return out + "s:" + std::to_string(std::get<StringId>(arg.value).id);
}

std::vector<FlatEvent> Flatten(const TrackEvents& events) {
  std::vector<FlatEvent> slices, instants, out;
  for (const Slice& s : events.slices) {
    slices.push_back(FlatSlice(events.track_id, s));
  }
  for (const Instant& i : events.instants) {
    instants.push_back(FlatInstant(events.track_id, i));
  }
  auto target = [&](EventKind kind, uint32_t index) -> FlatEvent* {
    auto& column = kind == EventKind::kSlice ? slices : instants;
    if (index >= column.size()) {
      ADD_FAILURE() << "track " << events.track_id
                    << ": args or flow refer to missing event " << index;
      return nullptr;
    }
    return &column[index];
  };
  for (const EventArgs& a : events.args) {
    if (FlatEvent* e = target(a.kind, a.index)) {
      EXPECT_TRUE(e->args.empty()) << "two argument lists on one event";
      e->args = DescribeArgs(a.args);
    }
  }
  for (const FlowLink& f : events.flows) {
    if (FlatEvent* e = target(f.kind, f.index)) {
      e->flows.emplace_back(f.flow_id, static_cast<int>(f.phase));
      std::sort(e->flows.begin(), e->flows.end());
    }
  }
  out = std::move(slices);
  out.insert(out.end(), instants.begin(), instants.end());
  for (const CounterSample& c : events.counters) {
    FlatEvent e;
    e.track = events.track_id;
    e.kind = FlatKind::kCounter;
    e.ts = c.ts_ns;
    e.value_bits = std::bit_cast<uint64_t>(c.value);
    out.push_back(e);
  }
  for (const StackSample& s : events.samples) {
    FlatEvent e;
    e.track = events.track_id;
    e.kind = FlatKind::kSample;
    e.ts = s.ts_ns;
    e.id = s.stack;
    out.push_back(e);
  }
  return out;
}

std::vector<FlatEvent> Flatten(const std::vector<TrackEvents>& tracks) {
  std::vector<FlatEvent> out;
  for (const TrackEvents& t : tracks) {
    std::vector<FlatEvent> f = Flatten(t);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

std::vector<FlatEvent> Sorted(std::vector<FlatEvent> events) {
  std::sort(events.begin(), events.end());
  return events;
}

std::vector<FlatEvent> ReadAllFlat(const TraceReader& reader, int threads) {
  return Sorted(Flatten(reader.ReadAllTracks(threads)));
}

std::vector<uint32_t> BruteForceDepths(const std::vector<Slice>& slices) {
  std::vector<uint32_t> depths(slices.size(), 0);
  for (size_t i = 0; i < slices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (slices[j].start_ns <= slices[i].start_ns &&
          slices[j].end_ns() >= slices[i].end_ns()) {
        ++depths[i];
      }
    }
  }
  return depths;
}

void EventLog::AddSlice(uint32_t track, int64_t start, int64_t duration,
                        uint32_t name, std::vector<Arg> args) {
  FlatEvent e = FlatSlice(track, Slice{start, duration, name, 0});
  e.args = DescribeArgs(args);
  events_.push_back(std::move(e));
}

void EventLog::AddInstant(uint32_t track, int64_t ts, uint32_t name,
                          std::vector<Arg> args) {
  FlatEvent e = FlatInstant(track, Instant{ts, name});
  e.args = DescribeArgs(args);
  events_.push_back(std::move(e));
}

void EventLog::AddCounter(uint32_t track, int64_t ts, double value) {
  FlatEvent e;
  e.track = track;
  e.kind = FlatKind::kCounter;
  e.ts = ts;
  e.value_bits = std::bit_cast<uint64_t>(value);
  events_.push_back(e);
}

void EventLog::AddSample(uint32_t track, int64_t ts, uint32_t stack) {
  FlatEvent e;
  e.track = track;
  e.kind = FlatKind::kSample;
  e.ts = ts;
  e.id = stack;
  events_.push_back(e);
}

void EventLog::AddFlowToLast(uint64_t flow_id, FlowPhase phase) {
  auto& flows = events_.back().flows;
  flows.emplace_back(flow_id, static_cast<int>(phase));
  std::sort(flows.begin(), flows.end());
}

std::vector<FlatEvent> EventLog::Overlapping(uint32_t track, int64_t t0,
                                             int64_t t1) const {
  std::vector<FlatEvent> out;
  for (const FlatEvent& e : events_) {
    if (e.track == track && Overlaps(e, t0, t1)) out.push_back(e);
  }
  return Sorted(std::move(out));
}

std::unique_ptr<TraceReader> OpenOrDie(std::string data,
                                       const ReaderOptions& options) {
  auto reader =
      TraceReader::OpenBuffer(std::move(data), "test.podtrace", options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return reader.ok() ? *std::move(reader) : nullptr;
}

std::vector<std::unique_ptr<TraceReader>> OpenBothWays(
    const std::string& data) {
  std::vector<std::unique_ptr<TraceReader>> readers;
  readers.push_back(OpenOrDie(data));
  readers.push_back(OpenOrDie(data, ReaderOptions{.verify_all = true}));
  EXPECT_TRUE(readers[0]->report().index_used);
  EXPECT_FALSE(readers[1]->report().index_used);
  for (const auto& r : readers) EXPECT_TRUE(r->report().intact());
  return readers;
}

std::unique_ptr<TraceWriter> NewWriter(std::string* data,
                                       WriterOptions options) {
  auto writer = TraceWriter::Create(MakeStringSink(data), options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  return writer.ok() ? *std::move(writer) : nullptr;
}

uint32_t ThreadTrack(TraceWriter& w, const std::string& name) {
  proto::Track t;
  t.set_kind(proto::TRACK_KIND_THREAD);
  t.set_name(name);
  return w.AddTrack(t);
}

bool ReadIndex(const std::string& file, proto::Index* index) {
  Trailer trailer;
  if (!trailer.ReadFromEnd(file).ok()) return false;
  auto record = ReadRecordAt(file, trailer.index_offset);
  if (!record.ok() || record->type != RecordType::kIndex) return false;
  auto payload = DecodePayload(*record);
  return payload.ok() && index->ParseFromString(*payload);
}

bool ReadChunkProto(const std::string& file, uint64_t offset,
                    proto::Chunk* chunk) {
  auto record = ReadRecordAt(file, offset);
  if (!record.ok() || record->type != RecordType::kChunk) return false;
  auto payload = DecodePayload(*record);
  return payload.ok() && chunk->ParseFromString(*payload);
}

bool ReadPackedTrackFlags(const std::string& file, uint64_t offset,
                          std::map<uint32_t, uint32_t>* flags) {
  auto record = ReadRecordAt(file, offset);
  if (!record.ok() || record->type != RecordType::kChunk) return false;
  auto payload = DecodePayload(*record);
  // Layouts 1 (format 1.1) and 2 (1.2) share the header and tracks section.
  if (!payload.ok() || payload->size() < 2 || (*payload)[0] != 0 ||
      ((*payload)[1] != 1 && (*payload)[1] != 2)) {
    return false;
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(payload->data()) + 2;
  const uint8_t* end =
      reinterpret_cast<const uint8_t*>(payload->data()) + payload->size();
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; p < end && shift < 64; shift += 7) {
      const uint8_t b = *p++;
      *v |= uint64_t{b & 0x7fu} << shift;
      if (b < 0x80) return true;
    }
    return false;
  };
  uint64_t sections, tracks_bytes, skip;
  if (!varint(&sections) || sections < 1 || !varint(&tracks_bytes)) {
    return false;
  }
  for (uint64_t i = 1; i < sections; ++i) {
    if (!varint(&skip)) return false;
  }
  // The tracks section comes first.
  if (tracks_bytes > static_cast<uint64_t>(end - p)) return false;
  end = p + tracks_bytes;
  while (p < end) {
    uint64_t id, f;
    if (!varint(&id) || !varint(&f)) return false;
    for (int i = 0; i < 6; ++i) {
      if (!varint(&skip)) return false;
    }
    (*flags)[static_cast<uint32_t>(id)] = static_cast<uint32_t>(f);
  }
  return true;
}

}  // namespace podscope::trace_format::testing
