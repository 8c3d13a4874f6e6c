// Opening captures: files, session folders and logdirs, clock alignment,
// parallel loading, damaged files, cancel, flows across files.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <utility>

#include "gtest/gtest.h"
#include "podscope/trace_format/clock_model.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trace.pb.h"
#include "podscope/trace_format/trailer.h"
#include "podscope/viewer/clock_mapper.h"
#include "podscope/viewer/trace_store.h"
#include "trace_gen.h"

namespace podscope::viewer {
namespace {

namespace fs = std::filesystem;
using testing::FileSpec;
using testing::TrackSpec;
using trace_format::Slice;

FileSpec RandomFile(uint64_t seed, const std::string& host, int64_t pid) {
  std::mt19937_64 rng(seed);
  FileSpec f;
  f.host = host;
  f.pid = pid;
  f.process_index = static_cast<int32_t>(pid);
  f.strings = {"step", "forward", "backward", "matmul", "allreduce", "load"};
  f.chunk_events = 500;
  for (int t = 0; t < 3; ++t) {
    TrackSpec track;
    track.name = "thread " + std::to_string(t);
    track.sort_index = 3 - t;
    track.slices = testing::RandomNestedSlices(rng, 800, 1'000'000'000, 6);
    for (int i = 0; i < 50; ++i) {
      track.instants.push_back({static_cast<int64_t>(rng() % 1'000'000'000),
                                1 + uint32_t(rng() % 6)});
    }
    std::sort(track.instants.begin(), track.instants.end(),
              [](auto& a, auto& b) { return a.ts_ns < b.ts_ns; });
    f.tracks.push_back(std::move(track));
  }
  TrackSpec counter;
  counter.kind = trace_format::proto::TRACK_KIND_COUNTER;
  counter.name = "memory";
  for (int i = 0; i < 300; ++i) {
    counter.counters.push_back({i * 1000, static_cast<double>(rng() % 100)});
  }
  f.tracks.push_back(std::move(counter));
  return f;
}

std::string WriteSession(const std::string& dir, int files, uint64_t seed) {
  fs::create_directories(dir);
  for (int i = 0; i < files; ++i) {
    const std::string host = "host" + std::to_string(i / 2);
    const FileSpec spec = RandomFile(seed + i, host, 100 + i);
    EXPECT_TRUE(testing::WriteFile(dir + "/" + host + "." +
                                       std::to_string(100 + i) + ".podtrace",
                                   spec)
                    .ok());
  }
  return dir;
}

std::vector<Slice> SortedSlices(const TraceStore& s, TrackId t) {
  const SliceColumns& c = s.data(t).slices;
  std::vector<Slice> out;
  for (uint32_t i = 0; i < c.size(); ++i) out.push_back(c.Get(i));
  std::sort(out.begin(), out.end(), trace_format::SliceOrder);
  return out;
}

TEST(StoreTest, LoadsEveryEventOfEveryFileInDisplayOrder) {
  const std::string dir = WriteSession(testing::TempDir("all") + "/s", 4, 1);
  auto store = TraceStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  const TraceStore& s = **store;
  EXPECT_TRUE(s.problems().empty());
  ASSERT_EQ(s.hosts().size(), 2u);
  ASSERT_EQ(s.processes().size(), 4u);
  EXPECT_EQ(s.hosts()[0].name, "host0");
  EXPECT_EQ(s.processes()[1].pid, 101);
  for (int i = 0; i < 4; ++i) {
    const FileSpec spec =
        RandomFile(1 + i, "host" + std::to_string(i / 2), 100 + i);
    const ProcessInfo& p = s.processes()[i];
    ASSERT_EQ(p.tracks.size(), 4u);
    // Tracks by sort index: the counter (0) first, then thread 2, 1, 0.
    EXPECT_EQ(s.tracks()[p.tracks[0]].name, "memory");
    EXPECT_EQ(s.tracks()[p.tracks[1]].name, "thread 2");
    for (int t = 0; t < 3; ++t) {
      const TrackId id = p.tracks[3 - t];
      std::vector<Slice> want = spec.tracks[t].slices;
      std::vector<Slice> got = SortedSlices(s, id);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].start_ns, want[i].start_ns);
        EXPECT_EQ(got[i].duration_ns, want[i].duration_ns);
        EXPECT_EQ(s.str(got[i].name), spec.strings[want[i].name - 1]);
        EXPECT_EQ(got[i].depth, want[i].depth);
      }
      EXPECT_EQ(s.data(id).instants.size(), 50u);
    }
    EXPECT_EQ(s.data(p.tracks[0]).counters.size(), 300u);
  }
}

TEST(StoreTest, ClockOffsetsLineHostsUp) {
  const std::string dir = testing::TempDir("clocks");
  // The same moment is local 1'000'000 on host a (offset +500) and local
  // 2'000'000 on host b (offset -999'500): both 1'000'500 on the reference.
  for (auto [host, local, offset] :
       {std::tuple<std::string, int64_t, int64_t>{"a", 1'000'000, 500},
        {"b", 2'000'000, -999'500}}) {
    FileSpec f;
    f.host = host;
    f.strings = {"allreduce"};
    f.offsets = {{0, offset}, {10'000'000, offset}};
    TrackSpec t;
    t.name = "main";
    t.slices = {{local, 2000, 1, 0}};
    f.tracks.push_back(t);
    ASSERT_TRUE(testing::WriteFile(dir + "/" + host + ".1.podtrace", f).ok());
  }
  auto store = TraceStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  const TraceStore& s = **store;
  ASSERT_EQ(s.processes().size(), 2u);
  EXPECT_TRUE(s.all_clocks_aligned());
  for (const ProcessInfo& p : s.processes()) {
    EXPECT_TRUE(p.clock_aligned);
    EXPECT_EQ(p.reference_clock, "client");
    EXPECT_EQ(s.data(p.tracks[0]).slices.start(0), 1'000'500) << p.host_name;
    EXPECT_EQ(s.data(p.tracks[0]).slices.duration(0), 2000);
  }
  // Without alignment each host keeps its own clock.
  OpenOptions raw;
  raw.align_clocks = false;
  auto unaligned = TraceStore::Open(dir, raw);
  ASSERT_TRUE(unaligned.ok());
  EXPECT_FALSE((*unaligned)->all_clocks_aligned());
  EXPECT_EQ((*unaligned)
                ->data((*unaligned)->processes()[1].tracks[0])
                .slices.start(0),
            2'000'000);
}

TEST(StoreTest, ClockMapperEqualsClockModel) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    trace_format::proto::ClockRecord record;
    const int points = static_cast<int>(rng() % 5);
    for (int i = 0; i < points; ++i) {
      auto* o = record.add_offsets();
      o->set_local_monotonic_ns(
          static_cast<int64_t>(rng() % 1'000'000'000'000));
      o->set_offset_ns(static_cast<int64_t>(rng() % 2'000'000'000) -
                       1'000'000'000);
      o->set_uncertainty_ns(static_cast<int64_t>(rng() % 1000));
    }
    const trace_format::ClockModel model(record);
    ClockMapper mapper(record);
    int64_t t = -static_cast<int64_t>(rng() % 100'000'000'000);
    for (int i = 0; i < 2000; ++i) {
      // Mostly ascending, sometimes a jump back.
      t += static_cast<int64_t>(rng() % 2'000'000'000);
      if (rng() % 50 == 0) t -= static_cast<int64_t>(rng() % 500'000'000'000);
      ASSERT_EQ(mapper.ToReference(t), model.ToReference(t))
          << "seed " << seed << " t " << t;
    }
  }
}

TEST(StoreTest, ParallelLoadEqualsSerialLoad) {
  const std::string dir = WriteSession(testing::TempDir("par") + "/s", 6, 7);
  OpenOptions serial;
  serial.threads = 1;
  OpenOptions parallel;
  parallel.threads = 4;
  auto a = TraceStore::Open(dir, serial);
  auto b = TraceStore::Open(dir, parallel);
  ASSERT_TRUE(a.ok() && b.ok());
  const TraceStore& x = **a;
  const TraceStore& y = **b;
  ASSERT_EQ(x.tracks().size(), y.tracks().size());
  ASSERT_EQ(x.string_count(), y.string_count());
  EXPECT_EQ(x.event_count(), y.event_count());
  for (StringId i = 0; i < x.string_count(); ++i) EXPECT_EQ(x.str(i), y.str(i));
  for (TrackId t = 0; t < x.tracks().size(); ++t) {
    EXPECT_EQ(x.tracks()[t].name, y.tracks()[t].name);
    EXPECT_EQ(x.tracks()[t].process, y.tracks()[t].process);
    const SliceColumns& c = x.data(t).slices;
    const SliceColumns& d = y.data(t).slices;
    ASSERT_EQ(c.size(), d.size());
    for (uint32_t i = 0; i < c.size(); ++i) ASSERT_EQ(c.Get(i), d.Get(i));
    EXPECT_EQ(x.data(t).instants.ts, y.data(t).instants.ts);
    EXPECT_EQ(x.data(t).instants.names, y.data(t).instants.names);
    EXPECT_EQ(x.data(t).counters.values, y.data(t).counters.values);
  }
}

TEST(StoreTest, DamagedFilesAreReportedAndTheRestLoads) {
  const std::string dir = WriteSession(testing::TempDir("bad") + "/s", 3, 3);
  {
    std::ofstream garbage(dir + "/zz.9.podtrace");
    garbage << "this is not a trace file at all";
  }
  // A file whose writer died: cut off its index and part of the last chunk.
  const std::string cut = dir + "/host0.100.podtrace";
  fs::resize_file(cut, fs::file_size(cut) * 2 / 3);
  auto store = TraceStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  const TraceStore& s = **store;
  EXPECT_EQ(s.processes().size(), 3u);
  ASSERT_EQ(s.problems().size(), 2u);
  const LoadProblem* garbage = nullptr;
  const LoadProblem* partial = nullptr;
  for (const LoadProblem& p : s.problems()) {
    (p.path == dir + "/zz.9.podtrace" ? garbage : partial) = &p;
  }
  ASSERT_NE(garbage, nullptr);
  ASSERT_NE(partial, nullptr);
  EXPECT_FALSE(garbage->loaded);
  // The message names the file and what is wrong with it.
  EXPECT_NE(garbage->message.find("zz.9.podtrace"), std::string::npos)
      << garbage->message;
  EXPECT_NE(garbage->message.find("not a Podscope trace file"),
            std::string::npos)
      << garbage->message;
  EXPECT_EQ(partial->path, cut);
  EXPECT_TRUE(partial->loaded);
  EXPECT_GT(partial->skipped_bytes, 0u);
  EXPECT_NE(partial->message.find("no index"), std::string::npos)
      << partial->message;
  EXPECT_GT(s.data(s.processes()[0].tracks[1]).slices.size(), 0u);

  // Nothing readable at all is an error that says so.
  const std::string only_bad = testing::TempDir("only_bad");
  std::ofstream(only_bad + "/x.1.podtrace") << "garbage";
  auto none = TraceStore::Open(only_bad);
  EXPECT_FALSE(none.ok());
  EXPECT_FALSE(TraceStore::Open(only_bad + "/missing").ok());
}

TEST(StoreTest, CancelStopsLoading) {
  const std::string dir = WriteSession(testing::TempDir("cancel") + "/s", 4, 5);
  std::atomic<bool> cancel{false};
  OpenOptions options;
  options.cancel = &cancel;
  options.threads = 2;
  int calls = 0;
  options.progress = [&](const OpenProgress&) {
    if (++calls == 2) cancel = true;
  };
  auto store = TraceStore::Open(dir, options);
  EXPECT_TRUE(absl::IsCancelled(store.status())) << store.status();

  std::atomic<bool> already{true};
  OpenOptions before;
  before.cancel = &already;
  EXPECT_TRUE(absl::IsCancelled(TraceStore::Open(dir, before).status()));
}

TEST(StoreTest, ProgressCountsFilesAndEvents) {
  const std::string dir =
      WriteSession(testing::TempDir("progress") + "/s", 3, 9);
  OpenOptions options;
  OpenProgress last;
  size_t calls = 0;
  options.progress = [&](const OpenProgress& p) {
    EXPECT_GE(p.events_loaded, last.events_loaded);
    last = p;
    ++calls;
  };
  auto store = TraceStore::Open(dir, options);
  ASSERT_TRUE(store.ok());
  EXPECT_GT(calls, 3u);
  EXPECT_EQ(last.files_total, 3u);
  EXPECT_EQ(last.files_done, 3u);
  EXPECT_EQ(last.events_loaded, (*store)->event_count());
}

TEST(StoreTest, LogdirOpensTheNewestSessionOrTheOneAsked) {
  const std::string logdir = testing::TempDir("logdir");
  WriteSession(logdir + "/older", 1, 11);
  WriteSession(logdir + "/newer", 2, 12);
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(logdir + "/older/host0.100.podtrace",
                      now - std::chrono::hours(2));
  for (const char* f : {"host0.100.podtrace", "host0.101.podtrace"}) {
    fs::last_write_time(logdir + "/newer/" + f, now - std::chrono::hours(1));
  }
  auto store = TraceStore::Open(logdir);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->sessions().size(), 2u);
  EXPECT_EQ((*store)->sessions()[0].name, "older");
  EXPECT_EQ((*store)->session().name, "newer");
  EXPECT_EQ((*store)->processes().size(), 2u);

  OpenOptions pick;
  pick.session = "older";
  auto older = TraceStore::Open(logdir, pick);
  ASSERT_TRUE(older.ok());
  EXPECT_EQ((*older)->processes().size(), 1u);
  pick.session = "nope";
  auto missing = TraceStore::Open(logdir, pick);
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_NE(missing.status().message().find("older"), std::string::npos);

  // A single file opens on its own.
  auto one = TraceStore::Open(logdir + "/older/host0.100.podtrace");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)->processes().size(), 1u);
}

TEST(StoreTest, FlowsLinkEventsAcrossFiles) {
  const std::string dir = testing::TempDir("flows");
  FileSpec host_side;
  host_side.host = "a";
  host_side.strings = {"launch", "other"};
  TrackSpec t;
  t.name = "main";
  t.slices = {{0, 100, 1, 0}, {10, 5, 2, 1}};
  t.flows = {{0, 77, trace_format::FlowPhase::kBegin}};
  host_side.tracks.push_back(t);
  FileSpec device_side;
  device_side.host = "b";
  device_side.strings = {"kernel"};
  TrackSpec d;
  d.name = "stream";
  d.kind = trace_format::proto::TRACK_KIND_DEVICE_STREAM;
  d.slices = {{150, 30, 1, 0}};
  d.flows = {{0, 77, trace_format::FlowPhase::kEnd}};
  device_side.tracks.push_back(d);
  ASSERT_TRUE(testing::WriteFile(dir + "/a.1.podtrace", host_side).ok());
  ASSERT_TRUE(testing::WriteFile(dir + "/b.2.podtrace", device_side).ok());
  auto store = TraceStore::Open(dir);
  ASSERT_TRUE(store.ok());
  const TraceStore& s = **store;
  const TrackId launch_track = s.processes()[0].tracks[0];
  const TrackId kernel_track = s.processes()[1].tracks[0];
  EventRef launch{launch_track, trace_format::EventKind::kSlice, 0};
  ASSERT_EQ(s.str(s.NameOf(launch)), "launch");
  auto flows = s.Flows(launch);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].flow_id, 77u);
  EXPECT_EQ(flows[0].phase, trace_format::FlowPhase::kEnd);
  EXPECT_EQ(flows[0].event.track, kernel_track);
  EXPECT_EQ(s.str(s.NameOf(flows[0].event)), "kernel");
  auto back = s.Flows(flows[0].event);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].event, launch);
  EXPECT_TRUE(
      s.Flows({launch_track, trace_format::EventKind::kSlice, 1}).empty());
}

// `y` holds the same tracks and events as `x`, in the same order.
void ExpectSameEvents(const TraceStore& x, const TraceStore& y) {
  EXPECT_EQ(x.event_count(), y.event_count());
  ASSERT_EQ(x.tracks().size(), y.tracks().size());
  for (TrackId t = 0; t < x.tracks().size(); ++t) {
    EXPECT_EQ(x.tracks()[t].name, y.tracks()[t].name);
    const SliceColumns& c = x.data(t).slices;
    const SliceColumns& d = y.data(t).slices;
    ASSERT_EQ(c.size(), d.size());
    for (uint32_t i = 0; i < c.size(); ++i) {
      ASSERT_EQ(c.Get(i), d.Get(i));
      ASSERT_EQ(x.str(c.name(i)), y.str(d.name(i)));
    }
    EXPECT_EQ(x.data(t).instants.ts, y.data(t).instants.ts);
    EXPECT_EQ(x.data(t).counters.values, y.data(t).counters.values);
    ASSERT_EQ(x.data(t).flows.size(), y.data(t).flows.size());
    for (size_t i = 0; i < x.data(t).flows.size(); ++i) {
      EXPECT_EQ(x.data(t).flows[i].index, y.data(t).flows[i].index);
    }
  }
}

// A track whose last chunk has been read (the index says which) becomes
// columns before the file is read to its end, its merged events going to
// the next track: the store is the same as when the file is read without
// its index (every track merged to the end), and as when the tracks were
// written in turn.
TEST(StoreTest, TracksEndingBeforeTheFileLoadAsWithoutTheIndex) {
  std::mt19937_64 rng(11);
  FileSpec spec;
  spec.host = "h";
  spec.strings = {"step", "layer", "op", "kernel"};
  spec.chunk_events = 300;
  // A drifting clock: the events are moved as they become columns.
  spec.offsets = {{0, 5'000}, {2'000'000'000, 5'900}};
  for (int t = 0; t < 3; ++t) {
    TrackSpec track;
    track.name = "thread " + std::to_string(t);
    track.slices =
        testing::RandomNestedSlices(rng, 400 + 500 * t, 1'000'000'000, 4);
    for (int i = 0; i < 40 * t; ++i) {
      track.instants.push_back({static_cast<int64_t>(rng() % 1'000'000'000),
                                1 + uint32_t(rng() % 4)});
    }
    std::sort(track.instants.begin(), track.instants.end(),
              [](auto& a, auto& b) { return a.ts_ns < b.ts_ns; });
    spec.tracks.push_back(std::move(track));
  }
  // Flows name slices by index: where each slice went is kept for them.
  spec.tracks[1].flows = {{3, 9, trace_format::FlowPhase::kBegin},
                          {250, 9, trace_format::FlowPhase::kEnd}};
  TrackSpec counter;
  counter.kind = trace_format::proto::TRACK_KIND_COUNTER;
  counter.name = "memory";
  for (int i = 0; i < 700; ++i) counter.counters.push_back({i * 1000, 1.0 * i});
  spec.tracks.push_back(std::move(counter));

  const std::string dir = testing::TempDir("ending");
  ASSERT_TRUE(testing::WriteFile(dir + "/after.podtrace", spec).ok());
  spec.interleave_tracks = true;
  ASSERT_TRUE(testing::WriteFile(dir + "/turns.podtrace", spec).ok());
  // The same file cut after its last chunk: no index.
  {
    auto reader = trace_format::TraceReader::Open(dir + "/after.podtrace");
    ASSERT_TRUE(reader.ok());
    ASSERT_GT((*reader)->chunks().size(), 10u);
    const trace_format::ChunkInfo& last = (*reader)->chunks().back();
    fs::copy_file(dir + "/after.podtrace", dir + "/cut.podtrace");
    fs::resize_file(dir + "/cut.podtrace", last.offset + last.length);
  }
  auto a = TraceStore::Open(dir + "/after.podtrace");
  ASSERT_TRUE(a.ok());
  const TraceStore& x = **a;
  EXPECT_TRUE(x.problems().empty());
  ASSERT_EQ(x.tracks().size(), 4u);
  for (const char* other : {"/cut.podtrace", "/turns.podtrace"}) {
    SCOPED_TRACE(other);
    auto b = TraceStore::Open(dir + other);
    ASSERT_TRUE(b.ok());
    ExpectSameEvents(x, **b);
  }
  // The flow's ends are the slices it was written on.
  const TrackId thread1 = x.processes()[0].tracks[1];
  ASSERT_EQ(x.tracks()[thread1].name, "thread 1");
  ASSERT_EQ(x.data(thread1).flows.size(), 2u);
  const trace_format::FlowLink& begin = x.data(thread1).flows[0];
  const Slice written = spec.tracks[1].slices[3];
  const EventRef ref{thread1, begin.kind, begin.index};
  EXPECT_EQ(x.DurationOf(ref), written.duration_ns);
  EXPECT_EQ(x.str(x.NameOf(ref)), spec.strings[written.name - 1]);
}

// The file's index is only a plan: an index that says a track ended
// chunks before it really does, or that counts more events than the file
// could hold, loads the same events as the honest one (the loader reads
// the file again without finishing tracks early, and takes room by what
// the file's size allows).
TEST(StoreTest, AnIndexThatLiesAboutTracksLoadsTheSameEvents) {
  std::mt19937_64 rng(5);
  FileSpec spec;
  spec.host = "h";
  spec.strings = {"step", "op"};
  spec.chunk_events = 200;
  for (int t = 0; t < 3; ++t) {
    TrackSpec track;
    track.name = "thread " + std::to_string(t);
    track.slices = testing::RandomNestedSlices(rng, 900, 1'000'000'000, 3);
    spec.tracks.push_back(std::move(track));
  }
  const std::string dir = testing::TempDir("lying_index");
  const std::string honest_path = dir + "/honest.podtrace";
  ASSERT_TRUE(testing::WriteFile(honest_path, spec).ok());
  std::string bytes;
  {
    std::ifstream in(honest_path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  trace_format::Trailer trailer;
  ASSERT_TRUE(trailer.ReadFromEnd(bytes).ok());
  auto record = trace_format::ReadRecordAt(bytes, trailer.index_offset);
  ASSERT_TRUE(record.ok());
  auto payload = trace_format::DecodePayload(*record);
  ASSERT_TRUE(payload.ok());
  trace_format::proto::Index honest;
  ASSERT_TRUE(honest.ParseFromString(*payload));
  // The same file with `index` in place of its own.
  auto forge = [&](const std::string& name,
                   const trace_format::proto::Index& index) {
    std::string out = bytes.substr(0, trailer.index_offset);
    out += trace_format::EncodeCompressedRecord(
        trace_format::RecordType::kIndex, index.SerializeAsString(), 1);
    std::string t;
    trace_format::Trailer{trailer.index_offset}.EncodeTo(&t);
    out += trace_format::EncodeRecord(trace_format::RecordType::kTrailer,
                                      trace_format::RecordEncoding::kRaw, t);
    std::ofstream(dir + name, std::ios::binary) << out;
    return dir + name;
  };
  // Every track's range dropped from the last chunk that holds it: each
  // is said to end a chunk early.
  trace_format::proto::Index early = honest;
  std::set<uint32_t> seen;
  for (int i = early.chunks_size() - 1; i >= 0; --i) {
    auto* ranges = early.mutable_chunks(i)->mutable_tracks();
    for (int r = ranges->size() - 1; r >= 0; --r) {
      if (seen.insert(ranges->Get(r).track_id()).second) {
        ranges->DeleteSubrange(r, 1);
      }
    }
  }
  ASSERT_EQ(seen.size(), 3u);
  // Counts no file of this size could hold.
  trace_format::proto::Index huge = honest;
  for (auto& chunk : *huge.mutable_chunks()) {
    for (auto& range : *chunk.mutable_tracks()) {
      range.set_event_count(uint64_t{1} << 60);
    }
  }
  auto h = TraceStore::Open(honest_path);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ((*h)->event_count(), 2700u);
  for (const auto& [name, index] : {std::pair{"/early.podtrace", early},
                                    std::pair{"/huge.podtrace", huge}}) {
    SCOPED_TRACE(name);
    auto f = TraceStore::Open(forge(name, index));
    ASSERT_TRUE(f.ok()) << f.status();
    ExpectSameEvents(**h, **f);
  }
}

}  // namespace
}  // namespace podscope::viewer
