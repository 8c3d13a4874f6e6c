// The profiler server's DumpFlightRecorder call: the client names only a
// session, which becomes a folder under the server's dump root or is
// refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "podscope/profiler/capture.h"
#include "podscope/profiler/flight_recorder.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/trace.h"
#include "trace_file.h"

namespace podscope::profiler {
namespace {

using testing::FreshDir;
using testing::ReadTraceFile;

std::unique_ptr<ProfilerServer> Serve(const std::string& dump_root) {
  ServerOptions options;
  options.dump_root = dump_root;
  auto server = StartServer(0, options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

struct RecorderOn {
  RecorderOn() { EXPECT_TRUE(StartFlightRecorder().ok()); }
  ~RecorderOn() { StopFlightRecorder(); }
};

TEST(FlightDumpServer, WritesTheSessionFolderUnderTheRoot) {
  RecorderOn on;
  { PODSCOPE_TRACE("before_the_request"); }
  const std::string root = FreshDir("dump-root");
  auto server = Serve(root);
  ASSERT_NE(server, nullptr);
  auto dump = RequestFlightRecorderDump(server->address(), {}, "stall-418",
                                        "all_reduce #418 stalled\n\x01");
  ASSERT_TRUE(dump.ok()) << dump.status();
  EXPECT_EQ(std::filesystem::path(dump->path).parent_path(), "stall-418");
  const auto file = ReadTraceFile(root + "/" + dump->path);
  ASSERT_NE(file.reader, nullptr);
  EXPECT_TRUE(file.reader->report().intact());
  EXPECT_EQ(file.SlicesNamed("before_the_request").size(), 1u);
  EXPECT_EQ(file.reader->metadata().attributes().at("flight_recorder.reason"),
            "all_reduce #418 stalled??");
  EXPECT_EQ(dump->events, file.reader->known_event_count());
}

TEST(FlightDumpServer, RefusesNamesThatAreNotOneFolder) {
  RecorderOn on;
  const std::string base = FreshDir("hostile");
  const std::string root = base + "/root";
  std::filesystem::create_directories(root);
  auto server = Serve(root);
  ASSERT_NE(server, nullptr);
  for (const std::string& name :
       {std::string("../x"), std::string("/tmp/x"), std::string(""),
        std::string(".."), std::string("."), std::string("a/b"),
        std::string(".hidden"), std::string("-rf"), std::string("a\\b"),
        std::string("x\0y", 3), std::string(200, 'a')}) {
    auto dump = RequestFlightRecorderDump(server->address(), {}, name, "");
    EXPECT_EQ(dump.status().code(), absl::StatusCode::kInvalidArgument)
        << "'" << name << "': " << dump.status();
  }
  // Nothing was written, inside the root or beside it.
  EXPECT_TRUE(std::filesystem::is_empty(root));
  EXPECT_FALSE(std::filesystem::exists(base + "/x"));
}

TEST(FlightDumpServer, RefusesWithoutARoot) {
  RecorderOn on;
  unsetenv("PODSCOPE_DUMP_ROOT");
  auto server = Serve("");
  ASSERT_NE(server, nullptr);
  auto dump = RequestFlightRecorderDump(server->address(), {}, "s", "");
  EXPECT_EQ(dump.status().code(), absl::StatusCode::kFailedPrecondition)
      << dump.status();
  EXPECT_NE(dump.status().message().find("dump root"), std::string::npos)
      << dump.status();
}

TEST(FlightDumpServer, RefusesWhenTheRecorderIsOff) {
  const std::string root = FreshDir("recorder-off");
  auto server = Serve(root);
  ASSERT_NE(server, nullptr);
  auto dump = RequestFlightRecorderDump(server->address(), {}, "s", "");
  EXPECT_EQ(dump.status().code(), absl::StatusCode::kFailedPrecondition)
      << dump.status();
}

}  // namespace
}  // namespace podscope::profiler
