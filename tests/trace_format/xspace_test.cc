// XSpace export and import: a podtrace survives the trip through XSpace
// whole, the XSpace written reads back with the schema as XProf would see
// it, and a run written like JAX's imports with the right tracks, nesting,
// arguments and times.
#include "podscope/trace_format/xspace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "podscope/trace_format/import.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"
#include "sample_trace.h"
#include "test_util.h"
#include "xspace_fixtures.h"

namespace podscope::trace_format::testing {
namespace {

namespace fs = std::filesystem;
namespace xp = ::tensorflow::profiler;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::path(::testing::TempDir()) /
            absl::StrCat("xspace_test_", getpid(), "_", rd());
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string Name(const TraceReader& r, uint32_t id) {
  return std::string(r.GetString(id));
}

std::string ArgText(const TraceReader& r, const Arg& a) {
  std::string v;
  if (const auto* i = std::get_if<int64_t>(&a.value))
    v = absl::StrCat("i:", *i);
  if (const auto* d = std::get_if<double>(&a.value)) {
    uint64_t bits;
    std::memcpy(&bits, d, sizeof bits);
    v = absl::StrCat("d:", bits);
  }
  if (const auto* s = std::get_if<StringId>(&a.value)) {
    v = absl::StrCat("s:", Name(r, s->id));
  }
  return absl::StrCat(Name(r, a.key), "=", v);
}

std::string StackText(const TraceReader& r, uint32_t id) {
  std::string out;
  const proto::Stack* s = r.FindStack(id);
  if (s == nullptr) return "<none>";
  for (uint32_t f : s->frame_ids()) {
    const proto::Frame* fr = r.FindFrame(f);
    absl::StrAppend(&out, fr ? Name(r, fr->function_name()) : std::string("?"),
                    "@", fr ? Name(r, fr->module_name()) : std::string("?"),
                    "+", fr ? fr->module_offset() : 0, ";");
  }
  return out;
}

// Every event of a file with its names resolved: comparable across files
// whose string tables differ.
std::vector<std::string> Describe(const TraceReader& r) {
  std::vector<std::string> out;
  for (const TrackEvents& e : r.ReadAllTracks(1)) {
    auto args = [&](EventKind k, uint32_t i) {
      std::string t;
      if (const EventArgs* a = e.FindArgs(k, i)) {
        for (const Arg& arg : a->args)
          absl::StrAppend(&t, ArgText(r, arg), ",");
      }
      for (const FlowLink& f : e.flows) {
        if (f.kind == k && f.index == i) {
          absl::StrAppend(&t, "flow ", f.flow_id, ":",
                          static_cast<int>(f.phase), ",");
        }
      }
      return t;
    };
    for (uint32_t i = 0; i < e.slices.size(); ++i) {
      const Slice& s = e.slices[i];
      out.push_back(absl::StrCat("track ", e.track_id, " slice ", s.start_ns,
                                 "+", s.duration_ns, " ", Name(r, s.name), " d",
                                 s.depth, " ", args(EventKind::kSlice, i)));
    }
    for (uint32_t i = 0; i < e.instants.size(); ++i) {
      const Instant& s = e.instants[i];
      out.push_back(absl::StrCat("track ", e.track_id, " instant ", s.ts_ns,
                                 " ", Name(r, s.name), " ",
                                 args(EventKind::kInstant, i)));
    }
    for (const CounterSample& c : e.counters) {
      uint64_t bits;
      std::memcpy(&bits, &c.value, sizeof bits);
      out.push_back(
          absl::StrCat("track ", e.track_id, " counter ", c.ts_ns, " ", bits));
    }
    for (const StackSample& s : e.samples) {
      out.push_back(absl::StrCat("track ", e.track_id, " sample ", s.ts_ns, " ",
                                 StackText(r, s.stack)));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Serialized(const google::protobuf::Message& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

TEST(XSpace, RoundTripKeepsEveryEventNameArgTrackAndTime) {
  TempDir dir;
  const fs::path original = dir.path() / "host.podtrace";
  {
    std::ofstream out(original, std::ios::binary);
    out << WriteSampleTrace();
  }
  auto reader = TraceReader::Open(original.string());
  ASSERT_TRUE(reader.ok()) << reader.status();
  const TraceReader* readers[] = {reader->get()};
  auto stats = ExportXSpace(readers, (dir.path() / "logdir").string(), "run");
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->files.size(), 1u);
  EXPECT_EQ(stats->events, (*reader)->known_event_count());
  EXPECT_EQ(fs::path(stats->files[0]).parent_path(),
            dir.path() / "logdir" / "plugins" / "profile" / "run");

  auto written = ImportXSpace(stats->files, (dir.path() / "back").string(), {});
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 1u);
  auto back = TraceReader::Open(written->front());
  ASSERT_TRUE(back.ok()) << back.status();

  const std::vector<std::string> want = Describe(**reader);
  const std::vector<std::string> got = Describe(**back);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
  ASSERT_EQ((*back)->tracks().size(), (*reader)->tracks().size());
  for (size_t i = 0; i < (*reader)->tracks().size(); ++i) {
    EXPECT_EQ(Serialized((*back)->tracks()[i]),
              Serialized((*reader)->tracks()[i]))
        << "track " << i;
  }
  EXPECT_EQ(Serialized((*back)->metadata()), Serialized((*reader)->metadata()));
  EXPECT_EQ(Serialized((*back)->clock()), Serialized((*reader)->clock()));
  EXPECT_EQ((*back)->drop_counts(), (*reader)->drop_counts());
}

TEST(XSpace, OutputReadsBackWithTheSchemaAsXProfSeesIt) {
  TempDir dir;
  // One host thread with three steps of nested work, one device stream.
  std::string data;
  {
    auto w = NewWriter(&data);
    proto::Metadata m;
    m.set_host("tpu-host");
    m.set_pid(77);
    m.set_session_id("sess");
    proto::Device* d = m.add_devices();
    d->set_global_id(3);
    d->set_kind("TPU");
    w->SetMetadata(m);
    w->AddClockSnapshot(1'000, 1'700'000'000'000'001'000);
    const uint32_t main = ThreadTrack(*w, "main");
    proto::Track s;
    s.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
    s.set_name("stream 0");
    s.set_device_id(3);
    const uint32_t stream = w->AddTrack(s);
    const uint32_t step_key = w->InternString("step");
    for (int i = 0; i < 3; ++i) {
      const int64_t base = 10'000 + i * 1'000'000;
      const Arg arg{step_key, int64_t{10 + i}};
      w->AddSlice(main, base, 900'000, w->InternString("train_step"),
                  {&arg, 1});
      w->AddSlice(main, base + 1'001, 500'000, w->InternString("forward"));
      w->AddSlice(stream, base + 2'000, 100'000, w->InternString("kernel"));
    }
    ASSERT_TRUE(w->Close().ok());
  }
  auto reader = TraceReader::OpenBuffer(data, "mem");
  ASSERT_TRUE(reader.ok());
  const TraceReader* readers[] = {reader->get()};
  auto stats = ExportXSpace(readers, dir.path().string(), "");
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->files.size(), 1u);
  EXPECT_EQ(fs::path(stats->files[0]),
            dir.path() / "plugins" / "profile" / "sess" / "tpu-host.xplane.pb");

  xp::XSpace space;
  std::ifstream in(stats->files[0], std::ios::binary);
  ASSERT_TRUE(space.ParseFromIstream(&in));
  ASSERT_EQ(space.hostnames_size(), 1);
  EXPECT_EQ(space.hostnames(0), "tpu-host");
  ASSERT_EQ(space.planes_size(), 2);
  const xp::XPlane& host = space.planes(0);
  const xp::XPlane& gpu = space.planes(1);
  EXPECT_EQ(host.name(), "/host:CPU");
  EXPECT_EQ(gpu.name(), "/device:TPU:3");
  ASSERT_EQ(host.lines_size(), 1);
  EXPECT_EQ(host.lines(0).name(), "main");
  EXPECT_EQ(host.lines(0).events_size(), 6);
  // Epoch nanoseconds: monotonic 10 000 is realtime 1.7e18 + 10 000.
  EXPECT_EQ(host.lines(0).timestamp_ns(), 1'700'000'000'000'010'000);
  auto stat_name = [](const xp::XPlane& p, int64_t id) {
    return p.stat_metadata().at(id).name();
  };
  int steps = 0;
  for (const xp::XEvent& e : host.lines(0).events()) {
    const std::string& name = host.event_metadata().at(e.metadata_id()).name();
    std::map<std::string, int64_t> st;
    for (const xp::XStat& s : e.stats())
      st[stat_name(host, s.metadata_id())] = s.int64_value();
    if (name == "train_step") {
      EXPECT_EQ(st["step_num"], 10 + steps);
      EXPECT_EQ(st["_r"], 1);
      EXPECT_EQ(st["group_id"], steps);
      EXPECT_EQ(e.offset_ps(), int64_t{steps} * 1'000'000'000);
      EXPECT_EQ(e.duration_ps(), 900'000'000);
      ++steps;
    } else {
      EXPECT_EQ(name, "forward");
      EXPECT_EQ(e.offset_ps() % 1'000'000'000, 1'001'000);  // ps precision
    }
  }
  EXPECT_EQ(steps, 3);
  // The device plane: its stream, and the "Steps" line XProf reads.
  ASSERT_EQ(gpu.lines_size(), 2);
  EXPECT_EQ(gpu.lines(0).name(), "stream 0");
  EXPECT_EQ(gpu.lines(0).events_size(), 3);
  for (const xp::XEvent& e : gpu.lines(0).events()) {
    ASSERT_EQ(e.stats_size(), 1);
    EXPECT_EQ(stat_name(gpu, e.stats(0).metadata_id()), "group_id");
  }
  EXPECT_EQ(gpu.lines(1).name(), "Steps");
  // XProf's kThreadIdStepInfo, the int 0xdeadbeef in an int64 line id.
  EXPECT_EQ(gpu.lines(1).id(), -559038737);
  EXPECT_EQ(gpu.lines(1).id(), int64_t{static_cast<int>(0xdeadbeefu)});
  ASSERT_EQ(gpu.lines(1).events_size(), 3);
  EXPECT_EQ(
      gpu.event_metadata().at(gpu.lines(1).events(2).metadata_id()).name(),
      "12");
}

// Stream tracks on a CPU, a GPU and a TPU device of the metadata and on a
// device only its track names.
std::string FourDeviceTrace() {
  std::string data;
  auto w = NewWriter(&data);
  proto::Metadata m;
  m.set_host("h");
  const char* kinds[] = {"CPU", "GPU", "TPU"};
  for (int i = 0; i < 3; ++i) {
    proto::Device* d = m.add_devices();
    d->set_global_id(i);
    d->set_kind(kinds[i]);
  }
  w->SetMetadata(m);
  w->AddClockSnapshot(0, 1'700'000'000'000'000'000);
  ThreadTrack(*w, "main");
  for (int device : {0, 1, 2, 7}) {
    proto::Track s;
    s.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
    s.set_name("stream");
    s.set_device_id(device);
    w->AddSlice(w->AddTrack(s), 1'000, 10, w->InternString("kernel"));
  }
  EXPECT_TRUE(w->Close().ok());
  return data;
}

TEST(XSpace, DevicesOtherThanGpuAndTpuAreCustomPlanesKeepingTheirKind) {
  auto reader = TraceReader::OpenBuffer(FourDeviceTrace(), "mem");
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto space = ToXSpace(**reader);
  ASSERT_TRUE(space.ok()) << space.status();
  // XProf's trace viewer shows GPU planes, else TPU planes, else custom
  // planes: a CPU device or one of unknown kind is custom.
  std::vector<std::pair<std::string, std::string>> planes;
  for (const xp::XPlane& p : space->planes()) {
    std::string type;
    for (const xp::XStat& s : p.stats()) {
      if (p.stat_metadata().at(s.metadata_id()).name() ==
          "device_type_string") {
        type = s.str_value();
      }
    }
    planes.emplace_back(p.name(), type);
  }
  EXPECT_EQ(planes, (std::vector<std::pair<std::string, std::string>>{
                        {"/host:CPU", ""},
                        {"/device:CUSTOM:0", "CPU"},
                        {"/device:GPU:1", "GPU"},
                        {"/device:TPU:2", "TPU"},
                        {"/device:CUSTOM:7", "DEVICE"}}));

  // Imported as Podscope's, the metadata comes back whole; imported as any
  // XSpace (without the plane info), custom planes get their kinds back
  // from the stat.
  auto kinds = [](const xp::XSpace& x) {
    std::string data;
    auto w = NewWriter(&data);
    EXPECT_TRUE(
        XSpaceToPodtrace(x.SerializeAsString(), {.source = "x"}, *w).ok());
    EXPECT_TRUE(w->Close().ok());
    auto r = TraceReader::OpenBuffer(data, "back");
    std::map<int32_t, std::string> out;
    for (const proto::Device& d : (*r)->metadata().devices()) {
      out[d.global_id()] = d.kind();
    }
    return out;
  };
  EXPECT_EQ(kinds(*space), (std::map<int32_t, std::string>{
                               {0, "CPU"}, {1, "GPU"}, {2, "TPU"}}));
  xp::XSpace foreign = *space;
  for (xp::XPlane& p : *foreign.mutable_planes()) {
    auto* stats = p.mutable_stats();
    stats->erase(
        std::remove_if(stats->begin(), stats->end(),
                       [&](const xp::XStat& s) {
                         return p.stat_metadata().at(s.metadata_id()).name() ==
                                "podscope.plane_info";
                       }),
        stats->end());
  }
  EXPECT_EQ(kinds(foreign),
            (std::map<int32_t, std::string>{
                {0, "CPU"}, {1, "GPU"}, {2, "TPU"}, {7, "DEVICE"}}));
}

TEST(XSpace, StepMarkersAreOnXProfsStepLineOfTpuAndCustomPlanesOnly) {
  // A host step around work on a GPU, a TPU and a custom (CPU) device.
  std::string data;
  {
    auto w = NewWriter(&data);
    proto::Metadata m;
    m.set_host("h");
    const char* kinds[] = {"GPU", "TPU", "CPU"};
    for (int i = 0; i < 3; ++i) {
      proto::Device* d = m.add_devices();
      d->set_global_id(i);
      d->set_kind(kinds[i]);
    }
    w->SetMetadata(m);
    w->AddClockSnapshot(0, 1'700'000'000'000'000'000);
    const uint32_t main = ThreadTrack(*w, "main");
    w->AddSlice(main, 1'000, 10'000, w->InternString("train_step"));
    for (int device = 0; device < 3; ++device) {
      proto::Track s;
      s.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
      s.set_name("stream");
      s.set_device_id(device);
      w->AddSlice(w->AddTrack(s), 2'000, 10, w->InternString("kernel"));
    }
    ASSERT_TRUE(w->Close().ok());
  }
  auto reader = TraceReader::OpenBuffer(data, "mem");
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto space = ToXSpace(**reader);
  ASSERT_TRUE(space.ok()) << space.status();
  std::map<std::string, std::vector<int64_t>> line_ids;
  for (const xp::XPlane& p : space->planes()) {
    for (const xp::XLine& l : p.lines()) line_ids[p.name()].push_back(l.id());
    if (p.name() == "/device:GPU:0") {
      // XProf derives the GPU's steps from the events' group_id.
      const xp::XEvent& e = p.lines(0).events(0);
      ASSERT_EQ(e.stats_size(), 1);
      EXPECT_EQ(p.stat_metadata().at(e.stats(0).metadata_id()).name(),
                "group_id");
    }
  }
  const int64_t stream = (*reader)->tracks()[1].id();
  EXPECT_EQ(line_ids["/device:GPU:0"], (std::vector<int64_t>{stream}));
  EXPECT_EQ(line_ids["/device:TPU:1"],
            (std::vector<int64_t>{stream + 1, -559038737}));
  EXPECT_EQ(line_ids["/device:CUSTOM:2"],
            (std::vector<int64_t>{stream + 2, -559038737}));
}

TEST(XSpace, ImportRecognisesStepLinesByXProfsIdAndTheEarlierOne) {
  // A foreign XSpace with unnamed step lines: XProf's id (as C++ stores it
  // and unsigned) and the one Podscope files used before.
  xp::XSpace space;
  space.add_hostnames("h");
  const int64_t ids[] = {-559038737, 0xdeadbeef, int64_t{1} << 40};
  for (int i = 0; i < 3; ++i) {
    xp::XPlane* p = space.add_planes();
    p->set_id(i);
    p->set_name(absl::StrCat("/device:TPU:", i));
    (*p->mutable_event_metadata())[1].set_id(1);
    (*p->mutable_event_metadata())[1].set_name("7");
    xp::XLine* ops = p->add_lines();
    ops->set_id(0);
    ops->set_name("XLA Ops");
    xp::XLine* steps = p->add_lines();
    steps->set_id(ids[i]);
    steps->set_timestamp_ns(1'000);
    xp::XEvent* e = steps->add_events();
    e->set_metadata_id(1);
    e->set_duration_ps(5'000);
  }
  std::string data;
  auto w = NewWriter(&data);
  ASSERT_TRUE(
      XSpaceToPodtrace(space.SerializeAsString(), {.source = "x"}, *w).ok());
  ASSERT_TRUE(w->Close().ok());
  auto r = TraceReader::OpenBuffer(data, "back");
  ASSERT_TRUE(r.ok()) << r.status();
  int step_tracks = 0;
  for (const proto::Track& t : (*r)->tracks()) {
    if (t.name() == "XLA Ops") {
      EXPECT_EQ(t.stream_id(), 0);
      continue;
    }
    ++step_tracks;
    EXPECT_EQ(t.name(), "Steps");
    EXPECT_EQ(t.stream_id(), -559038737);
    const TrackEvents e = (*r)->ReadTrack(t.id());
    ASSERT_EQ(e.slices.size(), 1u);
    EXPECT_EQ((*r)->GetString(e.slices[0].name), "7");
    EXPECT_EQ(e.slices[0].duration_ns, 5);
  }
  EXPECT_EQ(step_tracks, 3);
}

TEST(XSpace, JaxLikeRunImportsWithNestingArgsAndAlignedHosts) {
  TempDir dir;
  const JaxRun run = WriteJaxRun(dir.path() / "logdir");
  std::vector<std::string> files;
  for (const auto& f : run.files) files.push_back(f.string());
  ImportOptions options;
  options.session = "run1";
  auto written = ImportXSpace(files, (dir.path() / "out").string(), options);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 2u);
  for (int h = 0; h < 2; ++h) {
    auto r = TraceReader::Open((*written)[h]);
    ASSERT_TRUE(r.ok()) << r.status();
    const TraceReader& reader = **r;
    EXPECT_EQ(reader.metadata().host(), absl::StrCat("worker-", h));
    EXPECT_EQ(reader.metadata().process_index(), h);
    EXPECT_EQ(reader.metadata().process_count(), 2);
    EXPECT_EQ(reader.metadata().session_id(), "run1");
    ASSERT_EQ(reader.metadata().devices_size(), 1);
    EXPECT_EQ(reader.metadata().devices(0).kind(), "TPU");
    EXPECT_EQ(reader.known_event_count(), JaxRun::kEventsPerHost);
    ASSERT_EQ(reader.tracks().size(), JaxRun::kTracksPerHost);
    EXPECT_EQ(reader.tracks()[0].name(), "python3");
    EXPECT_EQ(reader.tracks()[0].tid(), 100);
    EXPECT_EQ(reader.tracks()[2].kind(), proto::TRACK_KIND_DEVICE_STREAM);
    EXPECT_EQ(reader.tracks()[3].name(), "XLA Ops");
    ASSERT_EQ(reader.clock().offsets_size(), 1);

    const int64_t t = JaxRun::kBaseNs + h * JaxRun::kHostSkewNs;
    const TrackEvents py = reader.ReadTrack(reader.tracks()[0].id());
    ASSERT_EQ(py.slices.size(), 9u);
    // train_step, PjitFunction (500.5 ns -> 500), ExecuteHelper nested.
    EXPECT_EQ(py.slices[3].start_ns, t + 10'000);
    EXPECT_EQ(py.slices[3].depth, 0u);
    EXPECT_EQ(reader.GetString(py.slices[4].name), "PjitFunction");
    EXPECT_EQ(py.slices[4].start_ns, t + 10'500);
    EXPECT_EQ(py.slices[4].duration_ns, 4'000);
    EXPECT_EQ(py.slices[4].depth, 1u);
    EXPECT_EQ(py.slices[5].start_ns, t + 11'500);
    EXPECT_EQ(py.slices[5].depth, 2u);
    std::vector<std::string> args;
    for (uint32_t i : {3u, 4u, 5u}) {
      const EventArgs* a = py.FindArgs(EventKind::kSlice, i);
      ASSERT_NE(a, nullptr);
      for (const Arg& arg : a->args) args.push_back(ArgText(reader, arg));
    }
    double flops = 1.5e9;
    uint64_t bits;
    std::memcpy(&bits, &flops, sizeof bits);
    EXPECT_EQ(args, (std::vector<std::string>{
                        "step_num=i:1", "_r=i:1", "group_id=i:1",
                        "program_id=i:42", absl::StrCat("flops=d:", bits),
                        "tf_op=s:jit(train_step)/dot", "payload=s:<3 bytes>"}));

    const TrackEvents eigen = reader.ReadTrack(reader.tracks()[1].id());
    ASSERT_EQ(eigen.slices.size(), 1u);
    EXPECT_EQ(eigen.slices[0].start_ns, t + 1'000);
    args.clear();
    for (const Arg& arg : eigen.FindArgs(EventKind::kSlice, 0)->args) {
      args.push_back(ArgText(reader, arg));
    }
    EXPECT_EQ(args, (std::vector<std::string>{"hlo_module=s:jit_train_step",
                                              "correlation_id=i:7"}));
    ASSERT_EQ(eigen.instants.size(), 1u);
    EXPECT_EQ(reader.GetString(eigen.instants[0].name),
              "ThreadpoolListener::Record");
    // Aggregated (num_occurrences 12, 100 ns in all): an instant at the
    // line's start carrying both.
    EXPECT_EQ(eigen.instants[0].ts_ns, t + 1'000);
    args.clear();
    const EventArgs* aggregated = eigen.FindArgs(EventKind::kInstant, 0);
    ASSERT_NE(aggregated, nullptr);
    for (const Arg& arg : aggregated->args) {
      args.push_back(ArgText(reader, arg));
    }
    EXPECT_EQ(args, (std::vector<std::string>{"num_occurrences=i:12",
                                              "duration_ps=i:100000"}));
  }
}

// A host of a skewed run: its wall clock is the true time plus `skew_ns`;
// `collectives` all-reduces of steps 0.. end at common true instants, each
// within +-1 us on this host; a host thread beside them.
xp::XSpace SkewedHost(const std::string& name, int64_t skew_ns, int collectives,
                      uint64_t seed) {
  constexpr int64_t kTrueBase = 1'750'000'000'000'000'000;
  std::mt19937_64 random(seed);
  xp::XSpace space;
  space.add_hostnames(name);
  xp::XPlane* host = space.add_planes();
  host->set_id(1);
  host->set_name("/host:CPU");
  (*host->mutable_event_metadata())[1].set_name("train_step");
  xp::XLine* thread = host->add_lines();
  thread->set_id(1);
  thread->set_name("python");
  thread->set_timestamp_ns(kTrueBase + skew_ns);
  for (int k = 0; k < collectives; ++k) {
    xp::XEvent* e = thread->add_events();
    e->set_metadata_id(1);
    e->set_offset_ps(int64_t{k} * 1'000'000'000);
    e->set_duration_ps(500'000'000);
  }
  xp::XPlane* device = space.add_planes();
  device->set_id(2);
  device->set_name("/device:TPU:0");
  (*device->mutable_stat_metadata())[1].set_name("group_id");
  (*device->mutable_event_metadata())[1].set_name("all-reduce.7");
  (*device->mutable_event_metadata())[2].set_name("fusion.2");
  xp::XLine* ops = device->add_lines();
  ops->set_id(1);
  ops->set_name("XLA Ops");
  ops->set_timestamp_ns(kTrueBase + skew_ns);
  for (int k = 0; k < collectives; ++k) {
    // Ends at true base + (k + 1) ms, on this host's clock, +-1 us.
    const int64_t jitter = static_cast<int64_t>(random() % 2001) - 1000;
    const int64_t end = int64_t{k + 1} * 1'000'000 + jitter;
    xp::XEvent* fusion = ops->add_events();
    fusion->set_metadata_id(2);
    fusion->set_offset_ps((end - 400'000) * 1000);
    fusion->set_duration_ps(100'000'000);
    xp::XEvent* e = ops->add_events();
    e->set_metadata_id(1);
    e->set_offset_ps((end - 200'000) * 1000);
    e->set_duration_ps(200'000'000);
    xp::XStat* step = e->add_stats();
    step->set_metadata_id(1);
    step->set_int64_value(k);
  }
  return space;
}

void WriteSpace(const xp::XSpace& space, const fs::path& path) {
  std::ofstream out(path, std::ios::binary);
  ASSERT_TRUE(space.SerializeToOstream(&out));
}

// XProf's hosts stamp events with their own wall clocks. An imported run
// of several hosts is lined up by the collectives they all ran: each file
// carries its offset to the first host's clock, within a stated
// uncertainty that holds the truth.
TEST(XSpace, ARunOfSkewedHostsLinesUpByItsCollectives) {
  TempDir dir;
  const fs::path run = dir.path() / "plugins" / "profile" / "skewed";
  fs::create_directories(run);
  const std::vector<int64_t> skew = {0, 3'200'000'123, -1'700'000'456,
                                     250'000'789};
  std::vector<std::string> files;
  for (size_t h = 0; h < skew.size(); ++h) {
    const fs::path path = run / absl::StrCat("host-", h, ".xplane.pb");
    WriteSpace(SkewedHost(absl::StrCat("host-", h), skew[h], 40, 11 + h), path);
    files.push_back(path.string());
  }
  auto written = ImportXSpace(files, (dir.path() / "out").string(), {});
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), skew.size());
  for (size_t h = 0; h < skew.size(); ++h) {
    auto r = TraceReader::Open((*written)[h]);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ((*r)->clock().offsets_size(), 1) << (*written)[h];
    const proto::ClockOffset& o = (*r)->clock().offsets(0);
    EXPECT_EQ(o.reference(), "host host-0 (by collectives)");
    // reference = local + offset; the truth is -skew (host 0: exactly 0).
    const int64_t error = o.offset_ns() + skew[h];
    EXPECT_LE(std::llabs(error), o.uncertainty_ns())
        << "host " << h << " understates its uncertainty";
    EXPECT_LE(o.uncertainty_ns(), 10'000) << "host " << h;
    if (h == 0) {
      EXPECT_EQ(o.offset_ns(), 0);
    }
  }
}

// When one host ran no collective, nothing lines the run up but the hosts'
// wall clocks, as XProf has it: no host claims an alignment it lacks.
TEST(XSpace, ARunWithAHostWithoutCollectivesKeepsWallClocks) {
  TempDir dir;
  const fs::path run = dir.path() / "run";
  fs::create_directories(run);
  std::vector<std::string> files;
  for (int h = 0; h < 3; ++h) {
    const fs::path path = run / absl::StrCat("host-", h, ".xplane.pb");
    WriteSpace(SkewedHost(absl::StrCat("host-", h), h * 1'000'000,
                          h == 2 ? 0 : 40, 5 + h),
               path);
    files.push_back(path.string());
  }
  auto written = ImportXSpace(files, (dir.path() / "out").string(), {});
  ASSERT_TRUE(written.ok()) << written.status();
  for (const std::string& path : *written) {
    auto r = TraceReader::Open(path);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ((*r)->clock().offsets_size(), 1);
    EXPECT_EQ((*r)->clock().offsets(0).reference(), "realtime (XSpace)");
    EXPECT_EQ((*r)->clock().offsets(0).offset_ns(), 0);
  }
}

TEST(XSpace, DamagedFilesAreErrorsNamingThem) {
  TempDir dir;
  const JaxRun run = WriteJaxRun(dir.path());
  const fs::path bad = run.run_dir / "worker-0.xplane.pb";
  fs::resize_file(bad, fs::file_size(bad) / 2);
  auto written =
      ImportXSpace({bad.string()}, (dir.path() / "out").string(), {});
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find(bad.string()), std::string::npos)
      << written.status();
  EXPECT_NE(written.status().message().find("damaged or truncated"),
            std::string::npos);

  // Beside a good file, with a callback: the good one is imported.
  std::vector<std::string> failed;
  ImportOptions options;
  options.on_file_error = [&](const std::string& f, const absl::Status&) {
    failed.push_back(f);
  };
  written = ImportXSpace({bad.string(), run.files[1].string()},
                         (dir.path() / "out2").string(), options);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->size(), 1u);
  EXPECT_EQ(failed, std::vector<std::string>{bad.string()});
}

TEST(ImportDispatch, DetectsFormatsByContentThenExtension) {
  TempDir dir;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.path() / name, std::ios::binary) << bytes;
    return (dir.path() / name).string();
  };
  EXPECT_EQ(*DetectFormat(write("a.bin", WriteSampleTrace())),
            SourceFormat::kPodtrace);
  EXPECT_EQ(*DetectFormat(write("b.bin", JaxLikeXSpace(0).SerializeAsString())),
            SourceFormat::kXSpace);
  EXPECT_EQ(*DetectFormat(write("c.bin", " \n{\"traceEvents\": []}")),
            SourceFormat::kChromeJson);
  EXPECT_EQ(*DetectFormat(write("d.bin", "[{\"ph\": \"X\"}]")),
            SourceFormat::kChromeJson);
  EXPECT_EQ(*DetectFormat(write("e.bin", std::string("\x1f\x8b\x08\x00", 4))),
            SourceFormat::kChromeJson);
  EXPECT_EQ(*DetectFormat(write("empty.xplane.pb", "")), SourceFormat::kXSpace);
  // A podtrace whose header is damaged is still a podtrace.
  EXPECT_EQ(*DetectFormat(write("damaged.podtrace", std::string("\x0a\x02"
                                                                "ab",
                                                                4))),
            SourceFormat::kPodtrace);
  auto unknown = DetectFormat(write("notes.txt", "hello"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("notes.txt"), std::string::npos);
  EXPECT_FALSE(DetectFormat((dir.path() / "missing").string()).ok());
}

TEST(ImportDispatch, ResolveImportsOnceAndReusesTheCacheUntilInputsChange) {
  TempDir dir;
  const JaxRun run = WriteJaxRun(dir.path() / "logdir");
  ImportOptions options;
  options.cache_dir = (dir.path() / "cache").string();
  auto first = ResolveTracePath(run.logdir.string(), options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->starts_with(options.cache_dir)) << *first;
  auto opened = OpenTraces(*first);
  ASSERT_TRUE(opened.ok());
  ASSERT_EQ(opened->readers.size(), 2u);
  EXPECT_TRUE(opened->failures.empty());
  EXPECT_TRUE(fs::is_directory(fs::path(*first) / "run1"));
  const fs::path imported = opened->readers[0]->name();
  const auto written_at = fs::last_write_time(imported);

  auto again = ResolveTracePath(run.logdir.string(), options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(fs::last_write_time(imported), written_at);

  // A changed input is a new import.
  {
    std::ofstream out(run.files[1], std::ios::binary | std::ios::app);
    out << std::string("\x22\x01x", 3);  // one more hostname field
  }
  auto changed = ResolveTracePath(run.logdir.string(), options);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_NE(*changed, *first);

  // A single file resolves too; podtrace paths come back unchanged.
  auto single = ResolveTracePath(run.files[0].string(), options);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_TRUE(fs::is_directory(fs::path(*single) / "run1"));
  const fs::path native = dir.path() / "native";
  fs::create_directories(native);
  std::ofstream(native / "h.1.podtrace", std::ios::binary)
      << WriteSampleTrace();
  EXPECT_EQ(*ResolveTracePath(native.string(), options), native.string());
  EXPECT_EQ(*ResolveTracePath((native / "h.1.podtrace").string(), options),
            (native / "h.1.podtrace").string());
  // Nothing is left half-written in the cache.
  for (const auto& e : fs::directory_iterator(options.cache_dir)) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".tmp")) << e.path();
  }
}

TEST(ImportDispatch, ResolveReportsADamagedRunNamingTheFile) {
  TempDir dir;
  const JaxRun run = WriteJaxRun(dir.path() / "logdir");
  for (const auto& f : run.files) fs::resize_file(f, 7);
  ImportOptions options;
  options.cache_dir = (dir.path() / "cache").string();
  auto resolved = ResolveTracePath(run.logdir.string(), options);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.status().message().find("worker-0.xplane.pb"),
            std::string::npos)
      << resolved.status();
}

}  // namespace
}  // namespace podscope::trace_format::testing
