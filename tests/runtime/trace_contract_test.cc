// The trace contract between the runtime and the analyses, read back from
// real sessions: per-kernel flops / bytes_accessed / op, Allocate and Free
// instants on each device's allocations track, the compile signature, and
// the machine's peak rates in the file metadata (measured once per host,
// then read from the cache by later processes).

#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/ir/scope.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/pjrt/client.h"
#include "test_util.h"
#include "trace_file.h"

namespace podscope::runtime {
namespace {

namespace tf = podscope::trace_format;

using profiler::testing::FreshDir;
using profiler::testing::TrackView;
using File = profiler::testing::TraceFile;

// The args of event `i` of `kind` on `t`, by key: ints as int64, strings
// as their text.
struct Args {
  std::map<std::string, int64_t> ints;
  std::map<std::string, std::string> strings;
  bool Has(const std::string& key) const {
    return ints.contains(key) || strings.contains(key);
  }
};

Args ArgsOf(const File& file, const TrackView& t, tf::EventKind kind,
            uint32_t i) {
  Args out;
  const tf::EventArgs* args = t.events.FindArgs(kind, i);
  if (args == nullptr) return out;
  for (const tf::Arg& a : args->args) {
    const std::string key = file.Name(a.key);
    if (const auto* v = std::get_if<int64_t>(&a.value)) {
      out.ints[key] = *v;
    } else if (const auto* s = std::get_if<tf::StringId>(&a.value)) {
      out.strings[key] = file.Name(s->id);
    }
  }
  return out;
}

File ReadFile(const std::string& path) {
  File f = profiler::testing::ReadTraceFile(path);
  EXPECT_NE(f.reader, nullptr) << "cannot read " << path;
  return f;
}

struct Kernel {
  std::string name;
  Args args;
};

std::vector<Kernel> Kernels(const File& file, const Device& device) {
  std::vector<Kernel> out;
  const TrackView* stream =
      file.Track("device " + std::to_string(device.id()) + " (CPU) stream");
  if (stream == nullptr) return out;
  for (uint32_t i = 0; i < stream->events.slices.size(); ++i) {
    out.push_back({file.Name(stream->events.slices[i].name),
                   ArgsOf(file, *stream, tf::EventKind::kSlice, i)});
  }
  return out;
}

TEST(TraceContract, KernelsCarryFlopsBytesAndOpKind) {
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  Device* device = client->addressable_devices()[0];

  GraphBuilder b("contract");
  Value x = b.Parameter(F32Shape({64, 32}));
  Value w = b.Parameter(F32Shape({32, 16}));
  Value image = b.Parameter(F32Shape({2, 3, 8, 8}));
  Value filter = b.Parameter(F32Shape({4, 3, 3, 3}));
  Value bias = b.Parameter(F32Shape({64, 16}));
  Value fc, conv;
  {
    ScopedName scope("fc");
    fc = b.Exp(b.Relu(b.Add(b.Dot(x, w), bias)));
  }
  {
    ScopedName scope("conv");
    conv = b.Conv2D(image, filter, {1, 1}, {1, 1});
  }
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({fc, conv}));

  const std::string dir = FreshDir("contract_kernels");
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  std::mt19937 rng(3);
  auto results = testing::Run(
      *client, graph,
      {testing::RandomF32({64, 32}, rng), testing::RandomF32({32, 16}, rng),
       testing::RandomF32({2, 3, 8, 8}, rng),
       testing::RandomF32({4, 3, 3, 3}, rng),
       testing::RandomF32({64, 16}, rng)});
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  const File file = ReadFile(*path);
  ASSERT_NE(file.reader, nullptr);

  std::map<std::string, Args> by_name;
  for (const Kernel& k : Kernels(file, *device)) by_name[k.name] = k.args;
  ASSERT_TRUE(by_name.contains("fc/dot"));
  ASSERT_TRUE(by_name.contains("fc/fusion"));
  ASSERT_TRUE(by_name.contains("conv/conv2d"));

  const Args& dot = by_name["fc/dot"];
  EXPECT_EQ(dot.strings.at("op"), "dot");
  EXPECT_EQ(dot.ints.at("flops"), 2 * 64 * 16 * 32);
  EXPECT_EQ(dot.ints.at("bytes_accessed"), (64 * 32 + 32 * 16 + 64 * 16) * 4);
  EXPECT_EQ(dot.strings.at("shape"), F32Shape({64, 16}).ToString());
  EXPECT_EQ(
      dot.strings.at("operand_shapes"),
      F32Shape({64, 32}).ToString() + " " + F32Shape({32, 16}).ToString());

  const Args& conv_args = by_name["conv/conv2d"];
  EXPECT_EQ(conv_args.strings.at("op"), "conv2d");
  EXPECT_EQ(conv_args.ints.at("flops"), 2 * 2 * 4 * 8 * 8 * 3 * 3 * 3);
  EXPECT_EQ(conv_args.ints.at("bytes_accessed"),
            (2 * 3 * 8 * 8 + 4 * 3 * 3 * 3 + 2 * 4 * 8 * 8) * 4);

  // add, relu and exp over 64x16: one flop per op per element.
  const Args& fusion = by_name["fc/fusion"];
  EXPECT_EQ(fusion.strings.at("op"), "fusion");
  EXPECT_EQ(fusion.ints.at("fused_ops"), 3);
  EXPECT_EQ(fusion.ints.at("flops"), 3 * 64 * 16);
  EXPECT_EQ(fusion.ints.at("bytes_accessed"), 3 * 64 * 16 * 4);

  // The machine's peak rates are in the metadata.
  const auto& attributes = file.reader->metadata().attributes();
  for (const char* key : {"machine.peak_gflops", "machine.peak_gbps",
                          "machine.peak_threads", "machine.peak_source"}) {
    ASSERT_TRUE(attributes.contains(key)) << key;
  }
  EXPECT_GT(std::stod(attributes.at("machine.peak_gflops")), 0);
  EXPECT_GT(std::stod(attributes.at("machine.peak_gbps")), 0);
  EXPECT_GT(std::stoi(attributes.at("machine.peak_threads")), 0);
  EXPECT_TRUE(attributes.at("machine.peak_source") == "measured" ||
              attributes.at("machine.peak_source") == "cached");
}

struct Instant {
  std::string name;
  int64_t ts;
  Args args;
};

// The device lists its stream, transfer and allocation tracks, by the
// file's track ids.
void ExpectDeviceListsItsTracks(const File& file, const std::string& id) {
  const auto& devices = file.reader->metadata().devices();
  ASSERT_FALSE(devices.empty());
  ASSERT_EQ(devices[0].stream_track_ids_size(), 3);
  const std::string names[] = {"device " + id + " (CPU) stream",
                               "device " + id + " transfers",
                               "device " + id + " allocations"};
  for (int i = 0; i < 3; ++i) {
    const tf::proto::Track* listed =
        file.reader->FindTrack(devices[0].stream_track_ids(i));
    ASSERT_NE(listed, nullptr) << i;
    EXPECT_EQ(listed->name(), names[i]);
  }
}

std::vector<Instant> InstantsOf(const File& file, const TrackView& track) {
  std::vector<Instant> events;
  for (uint32_t i = 0; i < track.events.instants.size(); ++i) {
    events.push_back({file.Name(track.events.instants[i].name),
                      track.events.instants[i].ts_ns,
                      ArgsOf(file, track, tf::EventKind::kInstant, i)});
  }
  return events;
}

TEST(TraceContract, AllocationsPairUpAndMatchTheDevicesAccounting) {
  const std::string dir = FreshDir("contract_memory");
  // The client is created inside the session: its device's whole life is
  // in the file.
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  Device* device = client->addressable_devices()[0];
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto ctx,
                                LazyContext::Create(client.get(), device));
  Tensor w = ctx->FromVector<float>({8, 4}, std::vector<float>(32, 0.5f));
  Tensor x = ctx->FromVector<float>({16, 8}, std::vector<float>(128, 1.0f));
  Tensor kept;
  {
    ScopedName model("model");
    ScopedName layer("fc");
    kept = Relu(Matmul(x, w));
  }
  ASSERT_TRUE(ctx->Sync().ok());
  {
    Tensor dropped = Exp(kept) * 2.0f;  // computed, then released
    ASSERT_TRUE(ctx->Sync().ok());
    ASSERT_TRUE(dropped.ToLiteral().ok());
  }
  ASSERT_TRUE(kept.ToLiteral().ok());
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  PODSCOPE_ASSERT_OK_AND_ASSIGN(const MemoryStats stats,
                                device->GetMemoryStats());
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  const File file = ReadFile(*path);
  ASSERT_NE(file.reader, nullptr);

  const std::string id = std::to_string(device->id());
  const TrackView* track = file.Track("device " + id + " allocations");
  ASSERT_NE(track, nullptr);
  EXPECT_EQ(track->track.kind(), tf::proto::TRACK_KIND_DEVICE_STREAM);
  EXPECT_EQ(track->track.device_id(), device->id());
  EXPECT_EQ(track->track.stream_id(), 2);
  ASSERT_NO_FATAL_FAILURE(ExpectDeviceListsItsTracks(file, id));

  const std::vector<Instant> events = InstantsOf(file, *track);
  ASSERT_FALSE(events.empty());
  std::map<int64_t, Instant> live;  // by buffer_id
  int allocations = 0, frees = 0;
  int64_t peak = 0;
  for (const Instant& e : events) {
    ASSERT_TRUE(e.args.ints.contains("buffer_id")) << e.name;
    ASSERT_TRUE(e.args.ints.contains("bytes")) << e.name;
    ASSERT_TRUE(e.args.ints.contains("in_use")) << e.name;
    const int64_t buffer = e.args.ints.at("buffer_id");
    peak = std::max(peak, e.args.ints.at("in_use"));
    if (e.name == "Allocate") {
      ++allocations;
      EXPECT_TRUE(e.args.strings.contains("op"));
      EXPECT_TRUE(e.args.strings.contains("scope"));
      EXPECT_FALSE(live.contains(buffer)) << "allocated twice: " << buffer;
      live[buffer] = e;
    } else {
      ASSERT_EQ(e.name, "Free");
      ++frees;
      ASSERT_TRUE(live.contains(buffer))
          << "freed, never allocated: " << buffer;
      EXPECT_EQ(live[buffer].args.ints.at("bytes"), e.args.ints.at("bytes"));
      EXPECT_LE(live[buffer].ts, e.ts);
      live.erase(buffer);
    }
  }
  EXPECT_EQ(allocations, stats.num_allocs);
  EXPECT_GT(frees, 0);
  EXPECT_EQ(peak, stats.peak_bytes_in_use);
  int64_t live_bytes = 0;
  for (const auto& [buffer, e] : live) live_bytes += e.args.ints.at("bytes");
  EXPECT_EQ(live_bytes, stats.bytes_in_use);
  const Instant& last = *std::max_element(
      events.begin(), events.end(),
      [](const Instant& a, const Instant& b) { return a.ts < b.ts; });
  EXPECT_EQ(last.args.ints.at("in_use"), stats.bytes_in_use);

  // The live buffers: the two transfers and `kept`, computed by the
  // fused relu (a single-op kernel named after its op) under model/fc.
  std::map<std::string, int> live_ops;
  for (const auto& [buffer, e] : live) {
    ++live_ops[e.args.strings.at("op") + "@" + e.args.strings.at("scope")];
  }
  EXPECT_EQ(live_ops, (std::map<std::string, int>{{"relu@model/fc", 1},
                                                  {"transfer@", 2}}))
      << ::testing::PrintToString(live_ops);
}

TEST(TraceContract, CompileMissesCarrySignatureOpsAndStep) {
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  Device* device = client->addressable_devices()[0];
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto ctx,
                                LazyContext::Create(client.get(), device));
  const std::string dir = FreshDir("contract_compiles");
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  Tensor x = ctx->FromVector<float>({3, 5}, std::vector<float>(15, 1.0f));
  Tensor labels = ctx->FromVector<int32_t>({3}, {0, 1, 2});
  for (int step = 0; step < 3; ++step) {
    x = Exp(x * 0.5f);  // the same graph every step: one miss, then hits
    ASSERT_TRUE(ctx->Sync().ok());
  }
  // The labels become the first parameter (lowered first), x the second.
  Tensor column = Reshape(Cast(labels, ElementType::kF32), {3, 1});
  Tensor y = column + x;
  ASSERT_TRUE(ctx->Sync().ok());  // a new graph at step 3
  ASSERT_TRUE(y.ToLiteral().ok());
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  const File file = ReadFile(*path);
  ASSERT_NE(file.reader, nullptr);

  std::vector<Args> compiles;
  for (const TrackView& t : file.tracks) {
    for (uint32_t i = 0; i < t.events.slices.size(); ++i) {
      if (file.Name(t.events.slices[i].name) == "Compile") {
        compiles.push_back(ArgsOf(file, t, tf::EventKind::kSlice, i));
      }
    }
  }
  ASSERT_EQ(compiles.size(), 4u);
  std::vector<int64_t> hits, steps;
  for (const Args& c : compiles) {
    hits.push_back(c.ints.at("cache_hit"));
    steps.push_back(c.ints.at("step"));
    EXPECT_TRUE(c.ints.contains("graph_hash"));
    EXPECT_GT(c.ints.at("graph_ops"), 0);
  }
  EXPECT_EQ(hits, (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(compiles[0].strings.at("signature"), "f32[3,5]");
  EXPECT_EQ(compiles[3].strings.at("signature"), "i32[3] f32[3,5]");
  // x * 0.5 then exp: parameter, constant (or broadcast), mul, exp.
  EXPECT_GE(compiles[0].ints.at("graph_ops"), 3);
}

TEST(TraceContract, CompilesOutsideALazyStepHaveNoStep) {
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  GraphBuilder b("direct");
  Value x = b.Parameter(F32Shape({2, 2}));
  Value seed = b.Parameter(I32Shape({}));
  Value out = b.Dropout(x, seed, 0.5f);
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({out}));
  const std::string dir = FreshDir("contract_direct_compile");
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  ASSERT_TRUE(client->Compile(graph).ok());
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  const File file = ReadFile(*path);
  ASSERT_NE(file.reader, nullptr);
  int found = 0;
  for (const TrackView& t : file.tracks) {
    for (uint32_t i = 0; i < t.events.slices.size(); ++i) {
      if (file.Name(t.events.slices[i].name) != "Compile") continue;
      ++found;
      const Args args = ArgsOf(file, t, tf::EventKind::kSlice, i);
      EXPECT_FALSE(args.Has("step"));
      EXPECT_EQ(args.strings.at("signature"), "f32[2,2] i32[]");
      EXPECT_EQ(args.ints.at("graph_ops"),
                static_cast<int64_t>(graph.nodes().size()));
    }
  }
  EXPECT_EQ(found, 1);
}

// Runs the child program with $XDG_CACHE_HOME at `cache`; returns the path
// of the trace it wrote.
std::string RunChild(const std::string& cache, const std::string& trace_dir) {
  const std::string command = "XDG_CACHE_HOME='" + cache + "' '" +
                              TRACE_CONTRACT_CHILD + "' '" + trace_dir + "'";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << command;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(TraceContract, TheSecondProcessOnAHostReadsThePeakFromTheCache) {
  const std::string cache = FreshDir("contract_peak_cache");
  const std::string first = RunChild(cache, FreshDir("contract_peak_first"));
  const std::string second = RunChild(cache, FreshDir("contract_peak_second"));
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  EXPECT_TRUE(std::filesystem::exists(cache + "/podscope/machine-peak"));
  const File a = ReadFile(first);
  const File b = ReadFile(second);
  ASSERT_NE(a.reader, nullptr);
  ASSERT_NE(b.reader, nullptr);
  const auto& pa = a.reader->metadata().attributes();
  const auto& pb = b.reader->metadata().attributes();
  ASSERT_TRUE(pa.contains("machine.peak_source"));
  ASSERT_TRUE(pb.contains("machine.peak_source"));
  EXPECT_EQ(pa.at("machine.peak_source"), "measured");
  EXPECT_EQ(pb.at("machine.peak_source"), "cached");
  EXPECT_GT(std::stod(pa.at("machine.peak_gflops")), 0);
  EXPECT_EQ(pa.at("machine.peak_gflops"), pb.at("machine.peak_gflops"));
  EXPECT_EQ(pa.at("machine.peak_gbps"), pb.at("machine.peak_gbps"));
  EXPECT_EQ(pa.at("machine.peak_threads"), pb.at("machine.peak_threads"));
}

}  // namespace
}  // namespace podscope::runtime
