// The packed chunk layout of format 1.1: large chunks with repeated call
// trees (what its predictions are built for), every event kind and
// argument type, its escapes, the protobuf chunks of format 1.0 still
// decoding, and damaged packed payloads failing cleanly.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "podscope/trace_format/chunk_codec.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/writer.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

using testing::FlatEvent;
using testing::NewWriter;
using testing::OpenOrDie;
using testing::ReadAllFlat;
using testing::ThreadTrack;

struct Node {
  uint32_t name;
  int64_t self;
  std::vector<Node> children;
};

Node Shape(std::mt19937_64& rng, int depth,
           const std::vector<uint32_t>& names) {
  Node n{
      names[rng() % names.size()], static_cast<int64_t>(50 + rng() % 5000), {}};
  if (depth < 7) {
    const int kids = static_cast<int>(rng() % (depth == 0 ? 6 : 3));
    for (int i = 0; i < kids; ++i) {
      n.children.push_back(Shape(rng, depth + 1, names));
    }
  }
  return n;
}

// Emits `n` in end order (children first), as a recorder does.
int64_t Emit(const Node& n, int64_t t, std::mt19937_64& rng, TraceWriter& w,
             uint32_t track, const std::vector<uint32_t>& keys) {
  const int64_t start = t;
  t += static_cast<int64_t>(rng() % (n.self / 4 + 1));
  for (const Node& c : n.children)
    t = Emit(c, t, rng, w, track, keys) + static_cast<int64_t>(rng() % 100);
  t += static_cast<int64_t>(rng() % (n.self + 1));
  std::vector<Arg> args;
  if (rng() % 10 == 0) {
    args.push_back({keys[0], static_cast<int64_t>((rng() % 9) << (rng() % 40)) -
                                 (rng() % 3 == 0 ? int64_t{1} << 40 : 0)});
  }
  if (rng() % 29 == 0)
    args.push_back({keys[1], 0.25 * static_cast<double>(rng() % 1000)});
  if (rng() % 31 == 0) args.push_back({keys[2], StringId{keys[1]}});
  if (rng() % 53 == 0) {
    args.push_back({keys[0], std::numeric_limits<int64_t>::min()});
    args.push_back({keys[1], std::numeric_limits<int64_t>::max()});
  }
  const EventRef ref = w.AddSlice(track, start, t - start, n.name, args);
  if (rng() % 37 == 0) w.AddFlow(ref, rng() % 100000 + 1, FlowPhase::kBegin);
  if (rng() % 41 == 0) {
    w.AddInstant(track, start + 1, n.name, args);
  }
  return t;
}

std::string RealisticTrace(bool packed, int level, bool background = false) {
  std::string data;
  WriterOptions o;
  o.packed_chunks = packed;
  o.background_thread = background;
  o.compression_level = level;
  o.chunk_events = 20000;
  auto w = NewWriter(&data, o);
  std::mt19937_64 rng(7);
  std::vector<uint32_t> names;
  for (int i = 0; i < 40; ++i)
    names.push_back(w->InternString("n" + std::to_string(i)));
  const std::vector<uint32_t> keys = {w->InternString("bytes"),
                                      w->InternString("ratio"),
                                      w->InternString("kind")};
  std::vector<uint32_t> tracks;
  std::vector<std::vector<Node>> shapes;
  for (int t = 0; t < 4; ++t) {
    tracks.push_back(ThreadTrack(*w, "t" + std::to_string(t)));
    shapes.emplace_back();
    for (int s = 0; s < 5; ++s) shapes.back().push_back(Shape(rng, 0, names));
  }
  proto::Track counter;
  counter.set_kind(proto::TRACK_KIND_COUNTER);
  const uint32_t ints = w->AddTrack(counter);
  const uint32_t doubles = w->AddTrack(counter);
  std::vector<int64_t> now(tracks.size(), 1'000'000'000);
  for (int round = 0; round < 400; ++round) {
    for (size_t t = 0; t < tracks.size(); ++t) {
      const Node& shape = shapes[t][rng() % shapes[t].size()];
      now[t] = Emit(shape, now[t], rng, *w, tracks[t], keys) + 300;
      w->AddCounter(ints, now[t], static_cast<double>(rng() % 100000) - 5000);
      w->AddCounter(doubles, now[t], static_cast<double>(rng() % 1000) / 3);
      w->AddSample(tracks[t], now[t] - 10, static_cast<uint32_t>(rng() % 50));
    }
  }
  EXPECT_TRUE(w->Close().ok());
  return data;
}

// The encoder and the Huffman coder have a copy per instruction set
// (base/cpu_dispatch.h); each must write these very bytes. The ctest runs
// with PODSCOPE_CPU_BASELINE=1 check the baseline copy. A deliberate change
// of the bytes the writer chooses updates the fingerprint.
TEST(PackedChunk, SameBytesOnEveryInstructionSet) {
  struct Expected {
    int level;
    size_t size;
    uint32_t crc;
  };
  for (const Expected& e :
       {Expected{0, 170735, 0x9ed32978u}, Expected{1, 127204, 0x081d5963u}}) {
    const std::string data = RealisticTrace(true, e.level);
    const auto crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(data.data()),
              static_cast<uInt>(data.size())));
    EXPECT_EQ(data.size(), e.size) << "level " << e.level;
    EXPECT_EQ(crc, e.crc) << "level " << e.level;
  }
}

TEST(PackedChunk, RealisticTraceReadsTheSameAsProtobufChunks) {
  const std::string old_layout = RealisticTrace(false, 1);
  const std::vector<FlatEvent> expected = ReadAllFlat(*OpenOrDie(old_layout));
  ASSERT_GT(expected.size(), 20000u);
  for (int level : {0, 1, 6}) {
    SCOPED_TRACE("level " + std::to_string(level));
    const std::string packed = RealisticTrace(true, level);
    auto reader = OpenOrDie(packed);
    EXPECT_TRUE(reader->report().intact());
    EXPECT_EQ(ReadAllFlat(*reader, 2), expected);
    if (level == 1) {
      EXPECT_LT(packed.size(), old_layout.size());
      // Encoding on the writer's own thread writes the same bytes.
      EXPECT_EQ(RealisticTrace(true, level, /*background=*/true), packed);
    }
  }
}

TEST(PackedChunk, EscapesAndExtremeTimes) {
  std::string data;
  auto w = NewWriter(&data);
  const uint32_t track = ThreadTrack(*w, "deep");
  const uint32_t name = w->InternString("x");
  std::vector<Slice> want;
  // 300 nested slices closing at once (pops beyond the byte's field), then
  // gaps of every size up to 2^62 (bucket symbols beyond the field).
  for (int d = 299; d >= 0; --d) {
    w->AddSlice(track, d, 1000 - d, name + d % 2);
  }
  int64_t t = 2000;
  for (int b = 0; b < 62; ++b) {
    t += int64_t{1} << b;
    w->AddSlice(track, t, b, name);
    t += b;
  }
  w->AddSlice(track, std::numeric_limits<int64_t>::max() - 5, 5, name);
  ASSERT_TRUE(w->Close().ok());
  std::string old_data;
  {
    WriterOptions o;
    o.packed_chunks = false;
    auto v = NewWriter(&old_data, o);
    ThreadTrack(*v, "deep");
    for (int d = 299; d >= 0; --d)
      v->AddSlice(track, d, 1000 - d, name + d % 2);
    int64_t u = 2000;
    for (int b = 0; b < 62; ++b) {
      u += int64_t{1} << b;
      v->AddSlice(track, u, b, name);
      u += b;
    }
    v->AddSlice(track, std::numeric_limits<int64_t>::max() - 5, 5, name);
    ASSERT_TRUE(v->Close().ok());
  }
  EXPECT_EQ(ReadAllFlat(*OpenOrDie(data)), ReadAllFlat(*OpenOrDie(old_data)));
  const TrackEvents e = OpenOrDie(data)->ReadTrack(track);
  ASSERT_EQ(e.slices.size(), 300u + 62 + 1);
  EXPECT_EQ(e.slices[299].depth, 299u);
  EXPECT_EQ(e.slices.back().start_ns, std::numeric_limits<int64_t>::max() - 5);
}

// A file written by a 1.0 writer (protobuf chunks, minor version 0) reads
// exactly as it always did.
TEST(PackedChunk, FormatOnePointZeroFilesStillRead) {
  std::string old_file = RealisticTrace(false, 1);
  old_file[10] = 0;  // minor version 0, as 1.0 writers wrote
  old_file[11] = 0;
  std::string packed = RealisticTrace(true, 1);
  auto old_reader = OpenOrDie(old_file);
  ASSERT_NE(old_reader, nullptr);
  EXPECT_TRUE(old_reader->report().intact());
  EXPECT_EQ(ReadAllFlat(*old_reader), ReadAllFlat(*OpenOrDie(packed)));
  // And its chunks are the protobuf Chunk of 1.0.
  proto::Chunk chunk;
  EXPECT_TRUE(testing::ReadChunkProto(old_file, old_reader->chunks()[0].offset,
                                      &chunk));
  EXPECT_GT(chunk.tracks_size(), 0);
}

// One track's slices in reader order: empty scopes back to back, as one
// thread recording the same scope flat out, with a few nanoseconds of
// timing noise; every 1,000th gap is long, and some deltas sit at the
// edge of layout 2's exact buckets (15, 16, 17).
TrackEvents BackToBackScopes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TrackEvents e;
  e.track_id = 1;
  int64_t t = 5'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    int64_t gap = 8 + static_cast<int64_t>(rng() % 4);
    if (i % 1000 == 999) gap = 40'000 + static_cast<int64_t>(rng() % 5000);
    if (i % 777 == 0) gap = 15 + static_cast<int64_t>(rng() % 3);
    t += gap;
    const int64_t duration = 9 + static_cast<int64_t>(rng() % 3);
    e.slices.push_back({t, duration, 7, 0});
    t += duration;
  }
  return e;
}

// The payload `encoder` holds, as a writer would hand it to deflate.
std::string Payload(PackedChunkEncoder& encoder) {
  std::vector<std::string_view> parts;
  std::string_view bits;
  encoder.Finish(&parts, &bits);
  std::string payload;
  for (std::string_view p : parts) payload.append(p);
  payload.append(bits);
  return payload;
}

// A packed payload of `tracks`.
std::string Pack(PackedChunkEncoder& encoder,
                 const std::vector<TrackEvents>& tracks) {
  encoder.Reset();
  for (const TrackEvents& t : tracks) encoder.Add(t);
  return Payload(encoder);
}

std::vector<TrackEvents> Decode(std::string_view payload) {
  std::vector<TrackEvents> out;
  absl::Status s = DecodeChunkBytes(payload, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// Format 1.2's layout 2 and 1.1's layout 1 carry the same events; the
// reader decodes both (chunks of files written by 1.1), each byte for byte
// from what its encoder wrote.
TEST(PackedChunk, LayoutOneAndTwoDecodeToTheSameEvents) {
  auto reader = OpenOrDie(RealisticTrace(true, 1));
  ASSERT_NE(reader, nullptr);
  std::vector<TrackEvents> tracks = reader->ReadAllTracks();
  tracks.push_back(BackToBackScopes(30000, 5));
  tracks.back().track_id = 99;
  for (TrackEvents& t : tracks) {
    for (Slice& s : t.slices) s.depth = 0;  // depths come from the decoder
  }
  PackedChunkEncoder v1(1), v2;
  const std::string one = Pack(v1, tracks), two = Pack(v2, tracks);
  ASSERT_GT(one.size(), 2u);
  EXPECT_EQ(one[1], 1);
  EXPECT_EQ(two[1], 2);
  EXPECT_EQ(two[1], static_cast<char>(kPackedChunkLayout));
  std::vector<TrackEvents> from_one = Decode(one), from_two = Decode(two);
  ASSERT_EQ(from_one.size(), tracks.size());
  ASSERT_EQ(from_two.size(), tracks.size());
  for (size_t i = 0; i < tracks.size(); ++i) {
    SCOPED_TRACE("track " + std::to_string(tracks[i].track_id));
    for (std::vector<TrackEvents>* got : {&from_one, &from_two}) {
      TrackEvents& g = (*got)[i];
      for (Slice& s : g.slices) s.depth = 0;
      EXPECT_EQ(g.track_id, tracks[i].track_id);
      EXPECT_EQ(g.slices, tracks[i].slices);
      EXPECT_EQ(g.instants, tracks[i].instants);
      EXPECT_EQ(g.counters, tracks[i].counters);
      EXPECT_EQ(g.samples, tracks[i].samples);
      EXPECT_EQ(g.args, tracks[i].args);
      EXPECT_EQ(g.flows, tracks[i].flows);
    }
  }
  // Damage to a layout-1 payload fails as cleanly as to layout 2.
  std::string damaged = one;
  damaged.resize(damaged.size() / 2);
  std::vector<TrackEvents> out;
  EXPECT_EQ(DecodeChunkBytes(damaged, &out).code(),
            absl::StatusCode::kDataLoss);
  damaged = one;
  damaged[1] = 3;
  absl::Status unknown = DecodeChunkBytes(damaged, &out);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(unknown.message().find("layout 3"), std::string_view::npos)
      << unknown;
}

// One thread's empty scopes back to back are the most regular trace there
// is: on disk they take well under a byte each (layout 1 took about 1.1).
TEST(PackedChunk, BackToBackScopesTakeUnderAByteEach) {
  constexpr size_t kScopes = 200000;
  const TrackEvents scopes = BackToBackScopes(kScopes, 11);
  std::string data;
  auto w = NewWriter(&data);
  const uint32_t track = ThreadTrack(*w, "loop");
  const uint32_t name = w->InternString("scope");
  // In end order, as a recorder hands them over.
  for (const Slice& s : scopes.slices) {
    w->AddSlice(track, s.start_ns, s.duration_ns, name);
  }
  ASSERT_TRUE(w->Close().ok());
  const double per_event = static_cast<double>(data.size()) / kScopes;
  EXPECT_LT(per_event, 0.69);
  auto reader = OpenOrDie(data);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->report().intact());
  const TrackEvents got = reader->ReadTrack(track);
  ASSERT_EQ(got.slices.size(), kScopes);
  for (size_t i = 0; i < kScopes; ++i) {
    ASSERT_EQ(got.slices[i].start_ns, scopes.slices[i].start_ns) << i;
    ASSERT_EQ(got.slices[i].duration_ns, scopes.slices[i].duration_ns) << i;
    ASSERT_EQ(got.slices[i].name, name) << i;
  }
  // The same events in layout 1 take more.
  PackedChunkEncoder v1(1), v2;
  const std::vector<TrackEvents> one_track = {scopes};
  EXPECT_LT(Pack(v2, one_track).size(), Pack(v1, one_track).size());
}

// Damage inside a packed payload (past the record CRC, as a buggy writer
// would make) fails the chunk with a DataLoss error or decodes to some
// events, and never reads out of bounds (the ASan build checks that).
TEST(PackedChunk, DamagedPayloadsFailCleanly) {
  std::string data;
  {
    WriterOptions o;
    o.compression_level = 0;
    o.chunk_events = 3000;
    auto w = NewWriter(&data, o);
    (void)w;
  }
  const std::string file = RealisticTrace(true, 0);
  auto reader = OpenOrDie(file);
  ASSERT_NE(reader, nullptr);
  auto record = ReadRecordAt(file, reader->chunks()[0].offset);
  ASSERT_TRUE(record.ok());
  auto payload = DecodePayload(*record);
  ASSERT_TRUE(payload.ok());
  ASSERT_TRUE(IsPackedChunk(*payload));
  std::vector<TrackEvents> out;
  ASSERT_TRUE(DecodeChunkBytes(*payload, &out).ok());
  std::mt19937_64 rng(3);
  int failures = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string damaged = *payload;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < edits; ++i) {
      const size_t at = 1 + rng() % (damaged.size() - 1);
      switch (rng() % 3) {
        case 0:
          damaged[at] = static_cast<char>(rng());
          break;
        case 1:
          damaged[at] ^= static_cast<char>(1 << (rng() % 8));
          break;
        default:
          damaged.resize(at);
          break;
      }
    }
    absl::Status s = DecodeChunkBytes(damaged, &out);
    if (!s.ok()) {
      ++failures;
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    }
  }
  EXPECT_GT(failures, 100);
}

// Slices in end order, as a recorder hands them over, pack to the bytes
// their reader order packs to, with argument and flow indices moved to
// reader order; what AddEndOrder does not take (slices that overlap, or
// already in reader order) it leaves to Add untouched.
TEST(PackedChunk, EndOrderPacksAsReaderOrder) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    TrackEvents end_order;
    end_order.track_id = 3;
    // Random call trees, each slice after its children; distinct
    // intervals, so that reader order is unique.
    int64_t t = 1000;
    std::function<void(int)> tree = [&](int depth) {
      const int64_t start = t;
      t += 1 + static_cast<int64_t>(rng() % 40);
      const int kids = depth < 5 ? static_cast<int>(rng() % 4) : 0;
      for (int k = 0; k < kids; ++k) {
        tree(depth + 1);
        t += 1 + static_cast<int64_t>(rng() % 20);
      }
      t += 1 + static_cast<int64_t>(rng() % 60);
      end_order.slices.push_back(
          {start, t - start, 1 + static_cast<uint32_t>(rng() % 5), 0});
    };
    while (end_order.slices.size() < 300) tree(0);
    const bool overlap = round % 4 == 3;
    if (overlap) end_order.slices[rng() % 150].duration_ns += 500;
    for (uint32_t i = 0; i < end_order.slices.size(); i += 7) {
      end_order.args.push_back(
          {EventKind::kSlice, i, {Arg{2, static_cast<int64_t>(i)}}});
    }
    end_order.flows.push_back({EventKind::kSlice, 5, 77, FlowPhase::kBegin});
    end_order.instants.push_back({1500, 4});
    if (round % 2 == 1) {
      // Other columns that reach past the slices on either side.
      end_order.counters.push_back({10, 1.5});
      end_order.instants.push_back({t + 1000, 4});
    }

    TrackEvents reader_order = end_order;
    SortTrackEvents(&reader_order);
    PackedChunkEncoder expected_encoder, encoder;
    const std::string expected = Pack(expected_encoder, {reader_order});

    TrackEvents given = end_order;
    encoder.Reset();
    std::pair<int64_t, int64_t> range{0, 0};
    const bool taken = encoder.AddEndOrder(given, &range);
    EXPECT_EQ(taken, !overlap);
    if (taken) {
      EXPECT_EQ(range, end_order.time_range());
    }
    if (!taken) {
      EXPECT_EQ(given.slices, end_order.slices);
      EXPECT_EQ(given.args.size(), end_order.args.size());
      continue;
    }
    EXPECT_EQ(Payload(encoder), expected);
    ASSERT_EQ(given.args.size(), reader_order.args.size());
    for (size_t i = 0; i < given.args.size(); ++i) {
      EXPECT_EQ(given.args[i].index, reader_order.args[i].index);
    }
    EXPECT_EQ(given.flows[0].index, reader_order.flows[0].index);
  }
  // Already in reader order: Add's.
  TrackEvents sorted = BackToBackScopes(100, 1);
  PackedChunkEncoder encoder;
  EXPECT_FALSE(encoder.AddEndOrder(sorted));
}

}  // namespace
}  // namespace podscope::trace_format
