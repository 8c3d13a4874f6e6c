// Perfetto export, checked by decoding the output with the classes
// generated from perfetto_trace.proto (Perfetto's field numbers) as
// trace_processor would read it.
#include "podscope/trace_format/perfetto_export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "podscope/trace_format/perfetto_trace.pb.h"
#include "podscope/trace_format/writer.h"

namespace podscope::trace_format {
namespace {

namespace fs = std::filesystem;
namespace pf = perfetto;

class PerfettoExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("podscope-perfetto-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // host-a: a thread with nested and overlapping slices, an instant with a
  // flow to the first overlapping slice, a counter; host-b (clock 1 ms
  // behind the reference): a device stream slice where a flow of the same
  // id (another flow: ids are per file) begins.
  std::vector<std::unique_ptr<TraceReader>> WriteTraces(size_t chunk_events) {
    std::vector<std::unique_ptr<TraceReader>> readers;
    for (int host = 0; host < 2; ++host) {
      const std::string path =
          (dir_ / (host == 0 ? "host-a.1.podtrace" : "host-b.2.podtrace"))
              .string();
      WriterOptions options;
      options.chunk_events = chunk_events;
      auto w = std::move(*TraceWriter::Create(path, options));
      proto::Metadata m;
      m.set_host(host == 0 ? "host-a" : "host-b");
      m.set_pid(100);  // the same pid on both hosts
      m.set_process_index(host);
      m.set_process_count(2);
      m.add_command_line("train");
      w->SetMetadata(m);
      if (host == 0) {
        proto::Track t;
        t.set_kind(proto::TRACK_KIND_THREAD);
        t.set_name("main");
        t.set_tid(100);
        const uint32_t main = w->AddTrack(t);
        t.set_kind(proto::TRACK_KIND_COUNTER);
        t.set_name("memory");
        t.set_unit("bytes");
        const uint32_t mem = w->AddTrack(t);
        const uint32_t step = w->InternString("step");
        const uint32_t op = w->InternString("op");
        const Arg args[] = {
            {w->InternString("n"), int64_t{7}},
            {w->InternString("s"), StringId{w->InternString("hello")}}};
        for (int i = 0; i < 10; ++i) {
          const int64_t base = i * 1000;
          w->AddSlice(main, base, 900, step, args);
          w->AddSlice(main, base + 100, 200, op);
          // Crosses the end of the first "op": overlaps without nesting.
          const EventRef second = w->AddSlice(main, base + 250, 300, op);
          if (i == 0) w->AddFlow(second, 77, FlowPhase::kEnd);
          w->AddCounter(mem, base, 1000.0 + i);
        }
        const EventRef mark = w->AddInstant(main, 5, w->InternString("send"));
        w->AddFlow(mark, 77, FlowPhase::kBegin);
      } else {
        proto::Track t;
        t.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
        t.set_name("GPU 0 stream 1");
        t.set_device_id(0);
        t.set_stream_id(1);
        const uint32_t stream = w->AddTrack(t);
        // Flow ids are per file: this 77 is another flow than host-a's.
        const EventRef k =
            w->AddSlice(stream, 50, 10, w->InternString("kernel"));
        w->AddFlow(k, 77, FlowPhase::kBegin);
        proto::ClockOffset offset;
        offset.set_local_monotonic_ns(0);
        offset.set_offset_ns(1000000);
        w->AddClockOffset(offset);
      }
      EXPECT_TRUE(w->Close().ok());
      readers.push_back(std::move(*TraceReader::Open(path)));
    }
    return readers;
  }

  pf::Trace Export(const std::vector<std::unique_ptr<TraceReader>>& readers,
                   PerfettoExportStats* stats = nullptr) {
    std::vector<const TraceReader*> raw;
    for (const auto& r : readers) raw.push_back(r.get());
    const std::string out = (dir_ / "out.pftrace").string();
    auto written = ExportPerfetto(raw, out);
    EXPECT_TRUE(written.ok()) << written.status();
    if (stats != nullptr && written.ok()) *stats = *written;
    std::ifstream in(out, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    pf::Trace trace;
    EXPECT_TRUE(trace.ParseFromString(s.str()));
    EXPECT_EQ(static_cast<uint64_t>(s.str().size()),
              written.ok() ? written->bytes : 0);
    return trace;
  }

  fs::path dir_;
};

TEST_F(PerfettoExportTest, DescriptorsSlicesFlowsAndCountersDecode) {
  auto readers = WriteTraces(/*chunk_events=*/1 << 16);
  PerfettoExportStats stats;
  pf::Trace trace = Export(readers, &stats);
  EXPECT_EQ(static_cast<uint64_t>(trace.packet_size()), stats.packets);
  EXPECT_EQ(stats.events, 10u * 4 + 1 + 1);

  std::map<uint64_t, pf::TrackDescriptor> tracks;
  std::set<int32_t> pids;
  // Per sequence: names interned so far; per track: open slice count.
  std::map<uint32_t, std::map<uint64_t, std::string>> names, arg_names;
  std::map<uint64_t, int> depth;
  std::map<std::string, int> begins_by_name;
  std::multiset<uint64_t> flow_out, flow_in;
  int counters = 0, instants = 0, ends = 0;
  std::set<uint32_t> sequences_cleared;
  for (const pf::TracePacket& p : trace.packet()) {
    ASSERT_TRUE(p.has_trusted_packet_sequence_id());
    const uint32_t seq = p.trusted_packet_sequence_id();
    if (p.sequence_flags() & pf::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) {
      // The first packet of its sequence.
      EXPECT_TRUE(sequences_cleared.insert(seq).second);
    } else {
      EXPECT_TRUE(sequences_cleared.count(seq)) << "state used before clear";
    }
    for (const auto& n : p.interned_data().event_names()) {
      names[seq][n.iid()] = n.name();
    }
    for (const auto& n : p.interned_data().debug_annotation_names()) {
      arg_names[seq][n.iid()] = n.name();
    }
    if (p.has_track_descriptor()) {
      const auto& d = p.track_descriptor();
      EXPECT_FALSE(tracks.count(d.uuid())) << "uuid reused";
      if (d.has_parent_uuid()) {
        EXPECT_TRUE(tracks.count(d.parent_uuid())) << "parent described later";
      }
      if (d.has_process()) pids.insert(d.process().pid());
      tracks[d.uuid()] = d;
      continue;
    }
    ASSERT_TRUE(p.has_track_event());
    EXPECT_EQ(p.timestamp_clock_id(), kPerfettoClockId);
    const pf::TrackEvent& ev = p.track_event();
    ASSERT_TRUE(tracks.count(ev.track_uuid())) << "event on unknown track";
    std::string name;
    if (ev.has_name_iid()) {
      // Every iid is defined earlier on its sequence (or in this packet).
      ASSERT_TRUE(names[seq].count(ev.name_iid())) << ev.name_iid();
      name = names[seq][ev.name_iid()];
    }
    for (const auto& a : ev.debug_annotations()) {
      ASSERT_TRUE(arg_names[seq].count(a.name_iid()));
    }
    for (uint64_t f : ev.flow_ids()) flow_out.insert(f);
    for (uint64_t f : ev.terminating_flow_ids()) flow_in.insert(f);
    switch (ev.type()) {
      case pf::TrackEvent::TYPE_SLICE_BEGIN:
        ++depth[ev.track_uuid()];
        ++begins_by_name[name];
        if (name == "step" && p.timestamp() == 0) {
          ASSERT_EQ(ev.debug_annotations_size(), 2);
          EXPECT_EQ(arg_names[seq][ev.debug_annotations(0).name_iid()], "n");
          EXPECT_EQ(ev.debug_annotations(0).int_value(), 7);
          EXPECT_EQ(ev.debug_annotations(1).string_value(), "hello");
        }
        if (name == "kernel") {
          // host-b's clock offset is applied: 50 ns local + 1 ms.
          EXPECT_EQ(p.timestamp(), 1000050u);
        }
        break;
      case pf::TrackEvent::TYPE_SLICE_END:
        ++ends;
        EXPECT_GT(depth[ev.track_uuid()]--, 0) << "end without begin";
        break;
      case pf::TrackEvent::TYPE_INSTANT:
        ++instants;
        EXPECT_EQ(name, "send");
        break;
      case pf::TrackEvent::TYPE_COUNTER:
        ++counters;
        EXPECT_GE(ev.double_counter_value(), 1000.0);
        EXPECT_EQ(tracks[ev.track_uuid()].counter().unit_name(), "bytes");
        break;
      default:
        ADD_FAILURE() << "unexpected type " << ev.type();
    }
  }
  // Two processes with distinct pids though both files say 100.
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_EQ(begins_by_name["step"], 10);
  EXPECT_EQ(begins_by_name["op"], 20);
  EXPECT_EQ(begins_by_name["kernel"], 1);
  EXPECT_EQ(ends, 31);
  for (const auto& [uuid, d] : depth) EXPECT_EQ(d, 0) << uuid;
  EXPECT_EQ(instants, 1);
  EXPECT_EQ(counters, 10);
  // host-a's flow leaves and arrives with one id; host-b's 77 stays apart.
  ASSERT_EQ(flow_out.size(), 2u);
  ASSERT_EQ(flow_in.size(), 1u);
  EXPECT_EQ(flow_out.count(*flow_in.begin()), 1u);
  // Threads, device streams, counters and the overlap lane are described.
  int threads = 0, named = 0;
  for (const auto& [uuid, d] : tracks) {
    if (d.has_thread()) {
      ++threads;
      EXPECT_EQ(d.thread().thread_name(), "main");
      EXPECT_EQ(d.thread().tid(), 100);
    }
    if (d.name() == "GPU 0 stream 1" || d.name() == "main (overlap 2)") ++named;
  }
  EXPECT_EQ(threads, 1);
  EXPECT_EQ(named, 2);
}

TEST_F(PerfettoExportTest, ManyChunksStreamWithTheSameEvents) {
  // Small chunks: the export goes chunk by chunk and still balances every
  // slice and defines every name before its use.
  auto readers = WriteTraces(/*chunk_events=*/7);
  ASSERT_GT(readers[0]->chunks().size(), 3u);
  PerfettoExportStats stats;
  pf::Trace trace = Export(readers, &stats);
  EXPECT_EQ(stats.events, 10u * 4 + 1 + 1);
  std::map<uint64_t, int> depth;
  std::set<uint64_t> defined;
  int begins = 0;
  for (const pf::TracePacket& p : trace.packet()) {
    for (const auto& n : p.interned_data().event_names()) {
      defined.insert((uint64_t{p.trusted_packet_sequence_id()} << 32) |
                     n.iid());
    }
    if (!p.has_track_event()) continue;
    const auto& ev = p.track_event();
    if (ev.has_name_iid()) {
      EXPECT_TRUE(defined.count(
          (uint64_t{p.trusted_packet_sequence_id()} << 32) | ev.name_iid()));
    }
    if (ev.type() == pf::TrackEvent::TYPE_SLICE_BEGIN) {
      ++depth[ev.track_uuid()];
      ++begins;
    }
    if (ev.type() == pf::TrackEvent::TYPE_SLICE_END) --depth[ev.track_uuid()];
  }
  EXPECT_EQ(begins, 31);
  for (const auto& [uuid, d] : depth) EXPECT_EQ(d, 0);
}

// A slice as trace_processor rebuilds it: events sorted by time (stable,
// so equal times keep file order), each END closing the innermost open
// slice of its track.
struct Decoded {
  std::string name;
  uint64_t start, end, track;
  size_t depth;
  auto operator<=>(const Decoded&) const = default;
};

std::vector<Decoded> DecodeSlices(const pf::Trace& trace) {
  std::map<uint64_t, std::string> names;  // one sequence in these tests
  std::vector<const pf::TracePacket*> events;
  for (const pf::TracePacket& p : trace.packet()) {
    for (const auto& n : p.interned_data().event_names()) {
      names[n.iid()] = n.name();
    }
    if (p.has_track_event()) events.push_back(&p);
  }
  std::stable_sort(events.begin(), events.end(), [](auto* a, auto* b) {
    return a->timestamp() < b->timestamp();
  });
  std::map<uint64_t, std::vector<Decoded>> open;
  std::vector<Decoded> out;
  for (const pf::TracePacket* p : events) {
    const pf::TrackEvent& ev = p->track_event();
    auto& stack = open[ev.track_uuid()];
    if (ev.type() == pf::TrackEvent::TYPE_SLICE_BEGIN) {
      stack.push_back({names[ev.name_iid()], p->timestamp(), 0, ev.track_uuid(),
                       stack.size()});
    } else if (ev.type() == pf::TrackEvent::TYPE_SLICE_END) {
      EXPECT_FALSE(stack.empty()) << "END without BEGIN";
      if (stack.empty()) continue;
      stack.back().end = p->timestamp();
      out.push_back(stack.back());
      stack.pop_back();
    }
  }
  for (const auto& [uuid, stack] : open) {
    EXPECT_TRUE(stack.empty()) << "unclosed on " << uuid;
  }
  std::sort(out.begin(), out.end(), [](const Decoded& a, const Decoded& b) {
    return std::tie(a.start, a.end, a.name) < std::tie(b.start, b.end, b.name);
  });
  return out;
}

TEST_F(PerfettoExportTest, SlicesKeepTheirLanesAcrossChunks) {
  // One slice per chunk: "a" and "b" overlap without nesting; "parent"
  // comes after its children, as a recorder writes scopes when they end,
  // and starts with the first of them.
  const std::string path = (dir_ / "h.podtrace").string();
  {
    WriterOptions options;
    options.chunk_events = 1;
    auto w = std::move(*TraceWriter::Create(path, options));
    proto::Metadata m;
    m.set_host("h");
    w->SetMetadata(m);
    proto::Track t;
    t.set_kind(proto::TRACK_KIND_THREAD);
    t.set_name("main");
    t.set_tid(1);
    const uint32_t main = w->AddTrack(t);
    auto slice = [&](const char* name, int64_t start, int64_t end) {
      w->AddSlice(main, start, end - start, w->InternString(name));
    };
    slice("a", 0, 100);
    slice("b", 50, 150);
    slice("child1", 1'010, 1'100);
    slice("child2", 1'200, 1'300);
    slice("parent", 1'000, 1'400);
    slice("tied", 2'000, 2'100);
    slice("tied parent", 2'000, 2'200);
    slice("next", 2'200, 2'300);
    ASSERT_TRUE(w->Close().ok());
  }
  std::vector<std::unique_ptr<TraceReader>> readers;
  readers.push_back(std::move(*TraceReader::Open(path)));
  ASSERT_GE(readers[0]->chunks().size(), 8u);
  const std::vector<Decoded> slices = DecodeSlices(Export(readers));
  ASSERT_EQ(slices.size(), 8u);
  std::map<std::string, Decoded> by_name;
  for (const Decoded& d : slices) by_name[d.name] = d;
  // Every slice comes back whole, BEGIN and END paired.
  const std::map<std::string, std::pair<uint64_t, uint64_t>> want = {
      {"a", {0, 100}},
      {"b", {50, 150}},
      {"child1", {1'010, 1'100}},
      {"child2", {1'200, 1'300}},
      {"parent", {1'000, 1'400}},
      {"tied", {2'000, 2'100}},
      {"tied parent", {2'000, 2'200}},
      {"next", {2'200, 2'300}}};
  for (const auto& [name, times] : want) {
    ASSERT_TRUE(by_name.count(name)) << name;
    EXPECT_EQ(by_name[name].start, times.first) << name;
    EXPECT_EQ(by_name[name].end, times.second) << name;
  }
  // "b" overlaps "a" from another chunk: another lane.
  EXPECT_NE(by_name["a"].track, by_name["b"].track);
  // The late parent nests its children on the track itself.
  EXPECT_EQ(by_name["parent"].track, by_name["a"].track);
  EXPECT_EQ(by_name["child1"].track, by_name["a"].track);
  EXPECT_EQ(by_name["child1"].depth, 1u);
  EXPECT_EQ(by_name["child2"].depth, 1u);
  EXPECT_EQ(by_name["next"].track, by_name["a"].track);
}

TEST_F(PerfettoExportTest, AFlowBetweenTwoFilesStaysOneFlow) {
  // Rank 0 sends (flow 500 begins), rank 1 receives (it ends); each rank
  // also has a flow 9 of its own, begun and ended within its file.
  std::vector<std::unique_ptr<TraceReader>> readers;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path =
        (dir_ / ("rank" + std::to_string(rank) + ".podtrace")).string();
    auto w = std::move(*TraceWriter::Create(path));
    proto::Metadata m;
    m.set_host("h");
    m.set_pid(10 + rank);
    m.set_process_index(rank);
    m.set_process_count(2);
    w->SetMetadata(m);
    proto::Track t;
    t.set_kind(proto::TRACK_KIND_THREAD);
    t.set_name("main");
    t.set_tid(1);
    const uint32_t main = w->AddTrack(t);
    const EventRef comm = w->AddSlice(
        main, 100, 50, w->InternString(rank == 0 ? "send" : "recv"));
    w->AddFlow(comm, 500, rank == 0 ? FlowPhase::kBegin : FlowPhase::kEnd);
    const EventRef launch = w->AddSlice(main, 200, 10, w->InternString("l"));
    w->AddFlow(launch, 9, FlowPhase::kBegin);
    const EventRef run = w->AddSlice(main, 300, 10, w->InternString("r"));
    w->AddFlow(run, 9, FlowPhase::kEnd);
    ASSERT_TRUE(w->Close().ok());
    readers.push_back(std::move(*TraceReader::Open(path)));
  }
  const pf::Trace trace = Export(readers);
  // Flow ids by (sequence, timestamp): out and terminating.
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> out, in;
  for (const pf::TracePacket& p : trace.packet()) {
    if (!p.has_track_event()) continue;
    const auto key =
        std::make_pair(p.trusted_packet_sequence_id(), p.timestamp());
    for (uint64_t f : p.track_event().flow_ids()) out[key] = f;
    for (uint64_t f : p.track_event().terminating_flow_ids()) in[key] = f;
  }
  ASSERT_EQ(out.size(), 3u);
  ASSERT_EQ(in.size(), 3u);
  auto id = [](auto& m, uint32_t seq, uint64_t ts) { return m[{seq, ts}]; };
  // send (rank 0) -> recv (rank 1): one id.
  EXPECT_EQ(id(out, 1, 100), id(in, 2, 100));
  // Each rank's flow 9 connects within its file, apart from the other's.
  EXPECT_EQ(id(out, 1, 200), id(in, 1, 300));
  EXPECT_EQ(id(out, 2, 200), id(in, 2, 300));
  EXPECT_NE(id(out, 1, 200), id(out, 2, 200));
  EXPECT_NE(id(out, 1, 200), id(out, 1, 100));
}

}  // namespace
}  // namespace podscope::trace_format
