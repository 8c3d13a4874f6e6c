// What a recorded SPMD run leaves in the trace file: the mesh and every
// named parameter's sharding in the file metadata, each device's shard work
// with its shard shapes, and the inserted collectives with their cause and
// bytes.
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/spmd.h"
#include "podscope/trace_format/reader.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;

TEST(SpmdTraceTest, FileHoldsShardingsShardWorkAndCollectives) {
  auto client = testing::MakeClient(4);
  ASSERT_NE(client, nullptr);
  auto mesh = std::make_shared<const Mesh>(
      Mesh::Create({0, 1, 2, 3}, {2, 2}, {"data", "model"}, *client).value());
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("spmd_trace_" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  GraphBuilder b("traced");
  Value h = b.Parameter(F32Shape({8, 16}));
  Value w = b.Parameter(F32Shape({16, 4}));
  Value y = b.ReduceSum(b.Dot(h, w), {0, 1});
  auto graph = b.Build({y}).value();
  auto program = SpmdProgram::Partition(
      graph, mesh,
      {Sharding::Create(mesh, {{"data"}, {}}, 2).value(),
       Sharding::Create(mesh, {{"data"}, {"model"}}, 2).value()},
      {}, {"h", "fc2.weight"});
  ASSERT_TRUE(program.ok()) << program.status();
  auto executor = SpmdExecutor::Create(client.get(), mesh).value();
  std::mt19937 rng(5);
  auto hs = executor->Shard(testing::RandomF32({8, 16}, rng),
                            (*program)->parameter_sharding(0));
  auto ws = executor->Shard(testing::RandomF32({16, 4}, rng),
                            (*program)->parameter_sharding(1));
  ASSERT_TRUE(hs.ok() && ws.ok());
  auto out = executor->Execute(**program, {*hs, *ws});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(executor->Gather((*out)[0]).ok());
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();

  auto reader = trace_format::TraceReader::Open(*path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const auto& attributes = (*reader)->metadata().attributes();
  ASSERT_TRUE(attributes.contains("spmd.mesh"));
  EXPECT_EQ(attributes.at("spmd.mesh"),
            "shape=(2,2) axes=('data','model') devices=[0,1,2,3]");
  ASSERT_TRUE(attributes.contains("spmd.sharding.fc2.weight"));
  EXPECT_EQ(attributes.at("spmd.sharding.fc2.weight"), "('data', 'model')");
  EXPECT_EQ(attributes.at("spmd.sharding.h"), "('data', None)");

  std::set<int64_t> devices;
  std::set<std::string> shard_shapes;
  std::vector<std::string> reasons;
  // Device stream -> the shapes of its dot kernels.
  std::map<std::string, std::set<std::string>> dot_shapes;
  for (const trace_format::TrackEvents& e : (*reader)->ReadAllTracks()) {
    const auto* track = (*reader)->FindTrack(e.track_id);
    const bool stream =
        track != nullptr &&
        track->kind() == trace_format::proto::TRACK_KIND_DEVICE_STREAM;
    for (const trace_format::EventArgs& args : e.args) {
      if (args.kind != trace_format::EventKind::kSlice) continue;
      const std::string name((*reader)->GetString(e.slices[args.index].name));
      for (const trace_format::Arg& arg : args.args) {
        const std::string key((*reader)->GetString(arg.key));
        const auto* text = std::get_if<trace_format::StringId>(&arg.value);
        const auto* number = std::get_if<int64_t>(&arg.value);
        if (stream && name.ends_with("dot") && key == "shape" && text) {
          dot_shapes[track->name()].insert(
              std::string((*reader)->GetString(text->id)));
        }
        if (name == "spmd_shard" && key == "device" && number) {
          devices.insert(*number);
        }
        if (name == "spmd_shard" && key == "shard_shape" && text) {
          shard_shapes.insert(std::string((*reader)->GetString(text->id)));
        }
        if (name == "spmd_collective" && key == "reason" && text) {
          reasons.push_back(std::string((*reader)->GetString(text->id)));
        }
      }
    }
  }
  EXPECT_EQ(devices, (std::set<int64_t>{0, 1, 2, 3}));
  // h @ w: rows on 'data', columns on 'model' -> f32[4,2] per device.
  std::string all_shapes;
  for (const std::string& s : shard_shapes) all_shapes += s + "\n";
  EXPECT_THAT(all_shapes, HasSubstr("dot f32[4,2]")) << all_shapes;
  // Each device's own dot kernel carries the shard it computed.
  ASSERT_EQ(dot_shapes.size(), 4u);
  for (const auto& [stream_name, shapes] : dot_shapes) {
    EXPECT_EQ(shapes, (std::set<std::string>{"f32[4,2]"})) << stream_name;
  }
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(reasons[0],
            "fc2.weight: ('data', 'model') -> (None, 'model') for dot");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podscope::runtime
