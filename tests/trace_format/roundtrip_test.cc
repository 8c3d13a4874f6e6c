// Round trips of every record kind through the writer and the reader
// (slices, metadata, strings, tracks, stacks, clocks, drop counts), and the
// index a closed file carries. events_test.cc covers the other events.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::NewWriter;
using testing::OpenBothWays;
using testing::OpenOrDie;
using testing::ThreadTrack;

// Both chunk layouts: packed (format 1.1, the default) and the protobuf
// Chunk of 1.0, which readers keep reading.
class RoundTripLayouts : public ::testing::TestWithParam<bool> {
 protected:
  WriterOptions Options() const {
    WriterOptions o;
    o.packed_chunks = GetParam();
    return o;
  }
};
INSTANTIATE_TEST_SUITE_P(Layouts, RoundTripLayouts, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "packed" : "protobuf";
                         });

TEST_P(RoundTripLayouts, NestedSlicesInEndOrderGetDepths) {
  std::string data;
  auto w = NewWriter(&data, Options());
  const uint32_t track = ThreadTrack(*w, "main");
  const uint32_t a = w->InternString("a");
  const uint32_t b = w->InternString("b");
  // End order, as a recorder produces: children first.
  w->AddSlice(track, 110, 10, b);
  w->AddSlice(track, 130, 20, b);
  w->AddSlice(track, 100, 100, a);
  w->AddSlice(track, 200, 0, b);
  w->AddSlice(track, 300, -5, a);  // negative durations are clamped
  ASSERT_TRUE(w->Close().ok());

  for (const auto& r : OpenBothWays(data)) {
    TrackEvents e = r->ReadTrack(track);
    ASSERT_EQ(e.slices.size(), 5u);
    EXPECT_EQ(e.slices[0], (Slice{100, 100, a, 0}));
    EXPECT_EQ(e.slices[1], (Slice{110, 10, b, 1}));
    EXPECT_EQ(e.slices[2], (Slice{130, 20, b, 1}));
    // Closed intervals: an empty slice at its parent's end is inside it.
    EXPECT_EQ(e.slices[3], (Slice{200, 0, b, 1}));
    EXPECT_EQ(e.slices[4], (Slice{300, 0, a, 0}));
  }
  const uint64_t offset = OpenOrDie(data)->chunks()[0].offset;
  if (GetParam()) {
    std::map<uint32_t, uint32_t> flags;
    ASSERT_TRUE(testing::ReadPackedTrackFlags(data, offset, &flags));
    EXPECT_EQ(flags[track] & testing::kPackedFlatSlices, 0u)
        << "nested slices use the nested encoding";
    return;
  }
  proto::Chunk chunk;
  ASSERT_TRUE(testing::ReadChunkProto(data, offset, &chunk));
  ASSERT_EQ(chunk.tracks_size(), 1);
  EXPECT_EQ(chunk.tracks(0).slice_boundary_delta_size(), 10)
      << "nested slices use the boundary encoding";
  EXPECT_EQ(chunk.tracks(0).slice_start_delta_size(), 0);
}

// The writer places end-order slices without a general sort and then
// reorders their arguments and flows alone: each must stay on its slice.
TEST_P(RoundTripLayouts, ArgsAndFlowsOfEndOrderSlicesStayOnTheirSlices) {
  std::string data;
  auto w = NewWriter(&data, Options());
  const uint32_t track = ThreadTrack(*w, "main");
  const uint32_t outer = w->InternString("outer");
  const uint32_t inner = w->InternString("inner");
  const uint32_t key = w->InternString("bytes");
  // Two outer slices, each after its two children; the children carry
  // arguments 1..4 and the second outer one a flow and argument 10.
  int64_t value = 0;
  for (int64_t base : {1000, 2000}) {
    for (int64_t child : {base + 10, base + 50}) {
      const Arg arg{key, ++value};
      w->AddSlice(track, child, 20, inner, {&arg, 1});
    }
    if (base == 2000) {
      const Arg arg{key, int64_t{10}};
      const EventRef ref = w->AddSlice(track, base, 100, outer, {&arg, 1});
      w->AddFlow(ref, 77, FlowPhase::kBegin);
    } else {
      w->AddSlice(track, base, 100, outer);
    }
  }
  ASSERT_TRUE(w->Close().ok());

  for (const auto& r : OpenBothWays(data)) {
    TrackEvents e = r->ReadTrack(track);
    ASSERT_EQ(e.slices.size(), 6u);
    // Reader order: outer, inner, inner, outer, inner, inner; each
    // argument names the start of the slice it was given with.
    const std::map<int64_t, int64_t> start_of_value = {
        {1, 1010}, {2, 1050}, {10, 2000}, {3, 2010}, {4, 2050}};
    ASSERT_EQ(e.args.size(), start_of_value.size());
    for (size_t i = 0; i < e.args.size(); ++i) {
      const EventArgs& a = e.args[i];
      if (i > 0) {
        EXPECT_LT(e.args[i - 1].index, a.index) << "sorted by event";
      }
      ASSERT_LT(a.index, e.slices.size());
      ASSERT_EQ(a.args.size(), 1u);
      const int64_t v = std::get<int64_t>(a.args[0].value);
      ASSERT_TRUE(start_of_value.count(v)) << v;
      EXPECT_EQ(e.slices[a.index].start_ns, start_of_value.at(v))
          << "argument " << v << " is on the wrong slice";
    }
    EXPECT_EQ(e.FindArgs(EventKind::kSlice, 0), nullptr);
    ASSERT_EQ(e.flows.size(), 1u);
    EXPECT_EQ(e.flows[0].index, 3u);
    EXPECT_EQ(e.flows[0].flow_id, 77u);
    EXPECT_EQ(e.slices[3].name, outer);
  }
}

TEST_P(RoundTripLayouts, OverlappingSlicesUseFlatEncoding) {
  std::string data;
  auto w = NewWriter(&data, Options());
  const uint32_t track = ThreadTrack(*w, "io");
  const uint32_t n = w->InternString("read");
  w->AddSlice(track, 0, 100, n);
  w->AddSlice(track, 50, 100, n);  // overlaps the first without nesting
  w->AddSlice(track, 60, 10, n);   // inside both
  w->AddSlice(track, 500, 10, n);
  ASSERT_TRUE(w->Close().ok());

  for (const auto& r : OpenBothWays(data)) {
    TrackEvents e = r->ReadTrack(track);
    ASSERT_EQ(e.slices.size(), 4u);
    EXPECT_EQ(e.slices[0], (Slice{0, 100, n, 0}));
    EXPECT_EQ(e.slices[1].start_ns, 50);
    EXPECT_EQ(e.slices[1].duration_ns, 100);
    EXPECT_EQ(e.slices[2].start_ns, 60);
    EXPECT_EQ(e.slices[2].duration_ns, 10);
    EXPECT_GE(e.slices[2].depth, 1u) << "inside the slice at 50";
    EXPECT_EQ(e.slices[3], (Slice{500, 10, n, 0}));
  }
  const uint64_t offset = OpenOrDie(data)->chunks()[0].offset;
  if (GetParam()) {
    std::map<uint32_t, uint32_t> flags;
    ASSERT_TRUE(testing::ReadPackedTrackFlags(data, offset, &flags));
    EXPECT_NE(flags[track] & testing::kPackedFlatSlices, 0u);
    return;
  }
  proto::Chunk chunk;
  ASSERT_TRUE(testing::ReadChunkProto(data, offset, &chunk));
  EXPECT_EQ(chunk.tracks(0).slice_start_delta_size(), 4);
  EXPECT_EQ(chunk.tracks(0).slice_duration_size(), 4);
  EXPECT_EQ(chunk.tracks(0).slice_boundary_delta_size(), 0);
}

TEST(RoundTrip, LaterMetadataReplacesEarlier) {
  std::string data;
  auto w = NewWriter(&data);
  proto::Metadata first;
  first.set_host("host-a");
  first.set_pid(7);
  first.set_process_index(-1);
  first.add_command_line("train");
  (*first.mutable_capture_options())["interval"] = "100ms";
  w->SetMetadata(first);
  ASSERT_TRUE(w->Flush().ok());

  proto::Metadata second = first;
  second.set_process_index(3);
  second.set_process_count(8);
  second.set_session_id("session-1");
  second.add_command_line("--steps=5");
  proto::Device* d = second.add_devices();
  d->set_global_id(3);
  d->set_kind("CPU");
  d->set_platform("cpu");
  d->add_stream_track_ids(1);
  second.set_start_monotonic_ns(123);
  second.set_start_realtime_ns(1'700'000'000'000'000'000);
  second.set_producer("podscope 0.1.0");
  second.mutable_tsc()->set_ns_per_tick(0.3125);
  second.mutable_tsc()->set_invariant_tsc(true);
  (*second.mutable_attributes())["kernel"] = "6.1";
  w->SetMetadata(second);
  ASSERT_TRUE(w->Close().ok());

  for (const auto& r : OpenBothWays(data)) {
    EXPECT_TRUE(MessageDifferencer::Equals(r->metadata(), second))
        << r->metadata().DebugString();
  }
  proto::Index index;
  ASSERT_TRUE(testing::ReadIndex(data, &index));
  int metadata_records = 0;
  for (const auto& rec : index.records()) {
    metadata_records +=
        rec.type() == static_cast<uint32_t>(RecordType::kMetadata);
  }
  EXPECT_EQ(metadata_records, 2);
}

TEST(RoundTrip, MetadataSetTwiceBeforeAFlushIsWrittenOnce) {
  std::string data;
  auto w = NewWriter(&data);
  proto::Metadata m;
  m.set_host("old");
  w->SetMetadata(m);
  m.set_host("new");
  w->SetMetadata(m);
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(OpenOrDie(data)->metadata().host(), "new");
  proto::Index index;
  ASSERT_TRUE(testing::ReadIndex(data, &index));
  ASSERT_EQ(index.records_size(), 1);
}

TEST(RoundTrip, FileWithoutMetadataHasUnknownProcessIndex) {
  std::string data;
  ASSERT_TRUE(NewWriter(&data)->Close().ok());
  auto r = OpenOrDie(data);
  EXPECT_EQ(r->metadata().process_index(), -1);
  EXPECT_TRUE(r->report().intact());
  EXPECT_TRUE(r->ReadAllTracks().empty());
}

TEST(RoundTrip, Strings) {
  std::string data;
  auto w = NewWriter(&data);
  const std::string unicode =
      "g\xC3\xA9n\xC3\xA9rer \xE6\x97\xA5\xE6\x9C\xAC "
      "\xF0\x9F\x9A\x80";
  const std::string long_string(200'000, 'x');
  const std::string with_nul("a\0b", 3);
  EXPECT_EQ(w->InternString(""), 0u);
  const uint32_t u = w->InternString(unicode);
  const uint32_t l = w->InternString(long_string);
  const uint32_t z = w->InternString(with_nul);
  EXPECT_EQ(w->InternString(unicode), u) << "interned once";
  EXPECT_EQ(w->InternString(std::string(long_string)), l);
  ASSERT_TRUE(w->Flush().ok());
  // Strings interned after a flush land in a later record.
  const uint32_t late = w->InternString("late");
  EXPECT_EQ(w->InternString(unicode), u);
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(std::set<uint32_t>({u, l, z, late}).size(), 4u);

  for (const auto& r : OpenBothWays(data)) {
    EXPECT_EQ(r->GetString(0), "");
    EXPECT_EQ(r->GetString(u), unicode);
    EXPECT_EQ(r->GetString(l), long_string);
    EXPECT_EQ(r->GetString(z), with_nul);
    EXPECT_EQ(r->GetString(late), "late");
    EXPECT_EQ(r->string_count(), 5u);
    // An id no string table holds reads as a placeholder, not as "".
    EXPECT_NE(r->GetString(999).find("lost"), std::string_view::npos);
  }
}

// Names come from the OS and from users: a thread name cut at 15 bytes in
// the middle of a character, an argv that is not UTF-8. They must survive
// byte for byte and must not cost the other strings of their record.
TEST(RoundTrip, NonUtf8BytesInNamesSurvive) {
  std::string data;
  auto w = NewWriter(&data);
  const std::string cut = "r\xC3\xA9seau-\xE6\x97";  // last character cut
  const std::string latin1 = "caf\xE9";
  proto::Metadata m;
  m.set_host(latin1);
  m.add_command_line("--name=" + cut);
  (*m.mutable_capture_options())["label"] = latin1;
  // Keys must be UTF-8 to be read back at all: they are repaired.
  (*m.mutable_attributes())["plane " + latin1] = latin1;
  (*m.mutable_capture_options())[cut] = "x";
  w->SetMetadata(m);
  proto::Track t;
  t.set_name(cut);
  const uint32_t track = w->AddTrack(t);
  const uint32_t good = w->InternString("good");
  const uint32_t bad = w->InternString(cut);
  const uint32_t also_good = w->InternString("also good");
  w->AddInstant(track, 1, bad);
  ASSERT_TRUE(w->Close().ok());
  for (const auto& r : OpenBothWays(data)) {
    EXPECT_EQ(r->GetString(good), "good");
    EXPECT_EQ(r->GetString(bad), cut);
    EXPECT_EQ(r->GetString(also_good), "also good");
    ASSERT_NE(r->FindTrack(track), nullptr);
    EXPECT_EQ(r->FindTrack(track)->name(), cut);
    EXPECT_EQ(r->metadata().host(), latin1);
    ASSERT_EQ(r->metadata().command_line_size(), 1);
    EXPECT_EQ(r->metadata().command_line(0), "--name=" + cut);
    EXPECT_EQ(r->metadata().capture_options().at("label"), latin1);
    EXPECT_EQ(r->metadata().attributes().at("plane caf\xEF\xBF\xBD"), latin1);
    EXPECT_EQ(r->metadata().capture_options().at(
                  "r\xC3\xA9seau-\xEF\xBF\xBD\xEF\xBF\xBD"),
              "x");
  }
}

TEST(RoundTrip, TracksOfEveryKind) {
  std::string data;
  auto w = NewWriter(&data);
  std::vector<proto::Track> written;
  proto::Track thread;
  thread.set_id(99);  // ignored: the writer assigns ids
  thread.set_kind(proto::TRACK_KIND_THREAD);
  thread.set_name("main");
  thread.set_tid(1234);
  thread.set_sort_index(-1);
  proto::Track stream;
  stream.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
  stream.set_name("cpu:1 compute");
  stream.set_device_id(1);
  stream.set_stream_id(2);
  proto::Track counter;
  counter.set_kind(proto::TRACK_KIND_COUNTER);
  counter.set_name("host memory");
  counter.set_unit("bytes");
  proto::Track unspecified;
  unspecified.set_name("");
  for (proto::Track t : {thread, stream, counter}) {
    t.set_id(w->AddTrack(t));
    written.push_back(t);
  }
  ASSERT_TRUE(w->Flush().ok());
  unspecified.set_id(w->AddTrack(unspecified));  // in a second record
  written.push_back(unspecified);
  ASSERT_TRUE(w->Close().ok());

  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(written[i].id(), i + 1) << "ids are assigned 1, 2, ...";
  }
  for (const auto& r : OpenBothWays(data)) {
    ASSERT_EQ(r->tracks().size(), written.size());
    for (size_t i = 0; i < written.size(); ++i) {
      EXPECT_TRUE(MessageDifferencer::Equals(r->tracks()[i], written[i]))
          << r->tracks()[i].DebugString();
      const proto::Track* found = r->FindTrack(written[i].id());
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(found->name(), written[i].name());
    }
    EXPECT_EQ(r->FindTrack(0), nullptr);
    EXPECT_EQ(r->FindTrack(17), nullptr);
  }
}

TEST(RoundTrip, FramesAndStacks) {
  std::string data;
  auto w = NewWriter(&data);
  const uint32_t track = ThreadTrack(*w, "main");
  std::vector<proto::Frame> frames;
  for (int i = 0; i < 3; ++i) {
    proto::Frame f;
    f.set_function_name(w->InternString("fn" + std::to_string(i)));
    f.set_module_name(w->InternString("libx.so"));
    f.set_module_offset(0x1000u * (i + 1));
    f.set_file_name(i == 0 ? 0 : w->InternString("x.cc"));
    f.set_line(10 * i);
    f.set_id(w->AddFrame(f));
    frames.push_back(f);
  }
  const uint32_t leaf_first[] = {frames[2].id(), frames[1].id(),
                                 frames[0].id()};
  const uint32_t deep = w->AddStack(leaf_first);
  const uint32_t shallow = w->AddStack(std::span(leaf_first).subspan(2));
  w->AddSample(track, 50, deep);
  w->AddSample(track, 10, shallow);
  w->AddSample(track, 10, deep);
  ASSERT_TRUE(w->Close().ok());
  EXPECT_NE(deep, shallow);

  for (const auto& r : OpenBothWays(data)) {
    for (const proto::Frame& f : frames) {
      const proto::Frame* found = r->FindFrame(f.id());
      ASSERT_NE(found, nullptr);
      EXPECT_TRUE(MessageDifferencer::Equals(*found, f));
    }
    const proto::Stack* s = r->FindStack(deep);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(
        std::vector<uint32_t>(s->frame_ids().begin(), s->frame_ids().end()),
        std::vector<uint32_t>(std::begin(leaf_first), std::end(leaf_first)));
    ASSERT_NE(r->FindStack(shallow), nullptr);
    EXPECT_EQ(r->FindStack(shallow)->frame_ids_size(), 1);
    EXPECT_EQ(r->FindStack(12345), nullptr);
    EXPECT_EQ(r->FindFrame(12345), nullptr);
    TrackEvents e = r->ReadTrack(track);
    ASSERT_EQ(e.samples.size(), 3u);
    EXPECT_EQ(e.samples[0].ts_ns, 10);
    EXPECT_EQ(e.samples[1].ts_ns, 10);
    EXPECT_EQ(std::set<uint32_t>({e.samples[0].stack, e.samples[1].stack}),
              std::set<uint32_t>({deep, shallow}));
    EXPECT_EQ(e.samples[2], (StackSample{50, deep}));
  }
}

TEST(RoundTrip, ClockSnapshotsAndOffsetsAcrossRecords) {
  std::string data;
  auto w = NewWriter(&data);
  w->AddClockSnapshot(100, 1'700'000'000'000'000'100);
  proto::ClockOffset o;
  o.set_local_monotonic_ns(100);
  o.set_offset_ns(-5'000);
  o.set_uncertainty_ns(40);
  o.set_reference("client-host");
  w->AddClockOffset(o);
  ASSERT_TRUE(w->Flush().ok());
  w->AddClockSnapshot(9'000, 1'700'000'000'000'009'050);
  o.set_local_monotonic_ns(9'000);
  o.set_offset_ns(-4'900);
  w->AddClockOffset(o);
  ASSERT_TRUE(w->Close().ok());

  for (const auto& r : OpenBothWays(data)) {
    const proto::ClockRecord& c = r->clock();
    ASSERT_EQ(c.snapshots_size(), 2);
    ASSERT_EQ(c.offsets_size(), 2);
    EXPECT_EQ(c.snapshots(0).monotonic_ns(), 100);
    EXPECT_EQ(c.snapshots(1).realtime_ns(), 1'700'000'000'000'009'050);
    EXPECT_EQ(c.offsets(0).offset_ns(), -5'000);
    EXPECT_EQ(c.offsets(1).local_monotonic_ns(), 9'000);
    EXPECT_EQ(c.offsets(1).uncertainty_ns(), 40);
    EXPECT_EQ(c.offsets(1).reference(), "client-host");
  }
}

TEST(RoundTrip, DropCountsAreCumulativeLastWins) {
  std::string data;
  auto w = NewWriter(&data);
  const uint32_t a = ThreadTrack(*w, "a");
  const uint32_t b = ThreadTrack(*w, "b");
  w->SetDropCount(a, 1);
  w->SetDropCount(a, 3);  // replaces the pending count
  ASSERT_TRUE(w->Flush().ok());
  w->SetDropCount(a, 7);
  w->SetDropCount(b, 2);
  ASSERT_TRUE(w->Close().ok());
  for (const auto& r : OpenBothWays(data)) {
    EXPECT_EQ(r->drop_counts().size(), 2u);
    EXPECT_EQ(r->drop_counts().at(a), 7u);
    EXPECT_EQ(r->drop_counts().at(b), 2u);
    EXPECT_EQ(r->total_dropped(), 9u);
  }
}

TEST(RoundTrip, IndexDescribesChunksAndTracks) {
  std::string data;
  auto w = NewWriter(&data, WriterOptions{.chunk_events = 5});
  const uint32_t a = ThreadTrack(*w, "a");
  const uint32_t b = ThreadTrack(*w, "b");
  ThreadTrack(*w, "never used");
  const uint32_t n = w->InternString("n");
  std::map<uint32_t, std::tuple<int64_t, int64_t, uint64_t>> expected;
  auto note = [&](uint32_t track, int64_t lo, int64_t hi) {
    auto [it, inserted] = expected.try_emplace(track, lo, hi, 0);
    auto& [min, max, count] = it->second;
    min = std::min(min, lo);
    max = std::max(max, hi);
    ++count;
  };
  for (int i = 0; i < 23; ++i) {
    w->AddSlice(a, 100 * i, 1'000, n);  // overlapping: ends reach far
    note(a, 100 * i, 100 * i + 1'000);
    if (i % 3 == 0) {
      w->AddCounter(b, 7 * i - 50, i);
      note(b, 7 * i - 50, 7 * i - 50);
    }
  }
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(w->stats().events, 31u);
  EXPECT_EQ(w->stats().chunks, 7u);
  EXPECT_EQ(w->stats().bytes, data.size());

  proto::Index index;
  ASSERT_TRUE(testing::ReadIndex(data, &index));
  EXPECT_EQ(index.event_count(), 31u);
  ASSERT_EQ(index.tracks_size(), 2) << "only tracks with events";
  for (const proto::TrackRange& t : index.tracks()) {
    ASSERT_TRUE(expected.contains(t.track_id()));
    const auto& [min, max, count] = expected[t.track_id()];
    EXPECT_EQ(t.min_ns(), min) << "track " << t.track_id();
    EXPECT_EQ(t.max_ns(), max) << "track " << t.track_id();
    EXPECT_EQ(t.event_count(), count) << "track " << t.track_id();
  }
  std::set<uint32_t> record_types;
  for (const proto::RecordEntry& r : index.records()) {
    record_types.insert(r.type());
    auto rec = ReadRecordAt(data, r.offset());
    ASSERT_TRUE(rec.ok()) << rec.status();
    EXPECT_EQ(static_cast<uint32_t>(rec->type), r.type());
    EXPECT_EQ(rec->size(), r.length());
  }
  EXPECT_EQ(record_types,
            std::set<uint32_t>({static_cast<uint32_t>(RecordType::kStrings),
                                static_cast<uint32_t>(RecordType::kTracks)}));

  auto reader = OpenOrDie(data);
  ASSERT_EQ(reader->chunks().size(), 7u);
  EXPECT_EQ(reader->known_event_count(), 31u);
  uint64_t previous_end = 0;
  for (size_t i = 0; i < reader->chunks().size(); ++i) {
    const ChunkInfo& c = reader->chunks()[i];
    EXPECT_TRUE(c.ranges_known);
    EXPECT_GE(c.offset, previous_end) << "chunks are in file order";
    previous_end = c.offset + c.length;
    auto rec = ReadRecordAt(data, c.offset);
    ASSERT_TRUE(rec.ok()) << rec.status();
    EXPECT_EQ(rec->type, RecordType::kChunk);
    EXPECT_EQ(rec->size(), c.length);
    auto decoded = reader->DecodeChunk(i);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    uint64_t events = 0;
    int64_t lo = std::numeric_limits<int64_t>::max();
    int64_t hi = std::numeric_limits<int64_t>::min();
    ASSERT_EQ(c.tracks.size(), decoded->size());
    for (const TrackEvents& e : *decoded) {
      auto range = std::find_if(c.tracks.begin(), c.tracks.end(),
                                [&](const proto::TrackRange& r) {
                                  return r.track_id() == e.track_id;
                                });
      ASSERT_NE(range, c.tracks.end());
      EXPECT_EQ(range->event_count(), e.event_count());
      int64_t tlo = std::numeric_limits<int64_t>::max();
      int64_t thi = std::numeric_limits<int64_t>::min();
      for (const Slice& s : e.slices) {
        tlo = std::min(tlo, s.start_ns);
        thi = std::max(thi, s.end_ns());
      }
      for (const CounterSample& s : e.counters) {
        tlo = std::min(tlo, s.ts_ns);
        thi = std::max(thi, s.ts_ns);
      }
      EXPECT_EQ(range->min_ns(), tlo);
      EXPECT_EQ(range->max_ns(), thi);
      lo = std::min(lo, tlo);
      hi = std::max(hi, thi);
      events += e.event_count();
    }
    EXPECT_EQ(c.event_count, events);
    EXPECT_EQ(c.min_ns, lo);
    EXPECT_EQ(c.max_ns, hi);
  }
  EXPECT_TRUE(reader->report().intact());
}

}  // namespace
}  // namespace podscope::trace_format
