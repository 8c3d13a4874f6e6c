// The profiler server's concurrent core without gRPC (so that
// ThreadSanitizer sees all of it): clients joining, reading, leaving and
// stopping one shared capture from many threads.
#include "src/server/capture_hub.h"

#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "workload.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/trace_format/reader.h"

namespace podscope::profiler::internal {
namespace {

using testing::Workload;


pb::CaptureRequest Request(int64_t duration_ms, const std::string& session = "") {
  pb::CaptureRequest r;
  r.set_duration_ms(duration_ms);
  r.set_session_id(session);
  return r;
}

// Reads a client's whole stream; returns the bytes and the end status.
std::string Drain(const std::shared_ptr<Capture>& c, absl::Status* end) {
  std::string file, chunk;
  size_t cursor = 0;
  pb::CaptureData progress;
  while (!c->stream->Next(&cursor, &chunk, 1 << 16,
                          std::chrono::milliseconds(50), &progress, end)) {
    file += chunk;
  }
  return file + chunk;
}

TEST(CaptureHub, ManyClientsGetTheSameCompleteFile) {
  Workload work;
  ServerOptions o;
  CaptureHub hub(o);
  constexpr int kClients = 6;
  std::vector<std::string> files(kClients);
  std::vector<absl::Status> ends(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * i));
      auto c = hub.Join(Request(150 + 10 * i, "shared"), "client");
      ASSERT_TRUE(c.ok()) << c.status();
      files[i] = Drain(*c, &ends[i]);
      hub.Leave(*c);
    });
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_TRUE(ends[i].ok()) << ends[i];
    EXPECT_EQ(files[i], files[0]) << "client " << i;
  }
  auto reader = trace_format::TraceReader::OpenBuffer(files[0], "shared");
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->report().has_index);
  EXPECT_GT((*reader)->known_event_count(), 100u);
  EXPECT_EQ((*reader)->metadata().session_id(), "shared");
  EXPECT_FALSE(IsTracing());
}

// Clients following a trace the process records itself, while that trace
// records from several threads and one client stops the capture: every
// client gets the same whole records, marked for the receiver to index,
// and the local trace goes on.
TEST(CaptureHub, ClientsFollowALocalTraceWhileItRecords) {
  const std::string dir = ::testing::TempDir() + "/hub-follow-" + std::to_string(getpid());
  ASSERT_TRUE(StartTrace(dir).ok());
  {
    Workload work_a;
    Workload work_b(std::chrono::microseconds(300));
    ServerOptions o;
    CaptureHub hub(o);
    constexpr int kClients = 3;
    std::vector<std::string> files(kClients);
    std::vector<absl::Status> ends(kClients);
    std::vector<int> indexes(kClients, 0);
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.emplace_back([&, i] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30 * i));
        auto c = hub.Join(Request(0), "client");
        ASSERT_TRUE(c.ok()) << c.status();
        EXPECT_FALSE((*c)->local_path.empty());
        std::string chunk;
        size_t cursor = 0;
        pb::CaptureData progress;
        while (!(*c)->stream->Next(&cursor, &chunk, 1 << 16,
                                   std::chrono::milliseconds(20), &progress,
                                   &ends[i])) {
          files[i] += chunk;
        }
        files[i] += chunk;
        indexes[i] = progress.receiver_indexes() ? 1 : 0;
        hub.Leave(*c);
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto stopped = hub.Stop("");
    EXPECT_TRUE(stopped.ok()) << stopped.status();
    for (auto& t : clients) t.join();
    for (int i = 0; i < kClients; ++i) {
      EXPECT_TRUE(ends[i].ok()) << ends[i];
      EXPECT_TRUE(indexes[i]) << "client " << i;
      EXPECT_EQ(files[i], files[0]) << "client " << i;
    }
    auto reader = trace_format::TraceReader::OpenBuffer(files[0], "followed");
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_FALSE((*reader)->report().has_index);
    EXPECT_TRUE((*reader)->report().skipped.empty());
    uint64_t events = 0;
    for (const auto& t : (*reader)->ReadAllTracks()) events += t.event_count();
    EXPECT_GT(events, 100u);
  }
  EXPECT_TRUE(IsTracing());
  EXPECT_TRUE(StopTrace().ok());
}

TEST(CaptureHub, StopFromAnotherThreadEndsEveryClient) {
  ServerOptions o;
  CaptureHub hub(o);
  auto a = hub.Join(Request(0, "open"), "a");
  ASSERT_TRUE(a.ok());
  auto b = hub.Join(Request(0), "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(hub.Join(Request(0, "other"), "c").status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A client whose session name is only a default joins whatever runs.
  pb::CaptureRequest any = Request(0, "its-own-folder");
  any.set_join_any_session(true);
  auto joined = hub.Join(any, "d");
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ((*joined)->session_id, "open");
  hub.Leave(*joined);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(hub.Stop("nope").status().code(), absl::StatusCode::kNotFound);
    EXPECT_TRUE(hub.Stop("open").ok());
  });
  absl::Status ea, eb;
  std::string fa, fb;
  std::thread ta([&] { fa = Drain(*a, &ea); });
  std::thread tb([&] { fb = Drain(*b, &eb); });
  ta.join();
  tb.join();
  stopper.join();
  hub.Leave(*a);
  hub.Leave(*b);
  EXPECT_EQ(fa, fb);
  EXPECT_TRUE(ea.ok());
}

TEST(CaptureHub, LastClientLeavingEndsTheCapture) {
  ServerOptions o;
  CaptureHub hub(o);
  auto c = hub.Join(Request(60'000), "leaver");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(IsTracing());
  hub.Leave(*c);
  absl::Status end;
  Drain(*c, &end);  // returns once the capture has ended
  for (int i = 0; i < 100 && IsTracing(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(IsTracing());
}

TEST(CaptureHub, LimitsAreEnforced) {
  // Busy enough to outgrow 4 KiB within the capture: packed chunks store
  // a regular scope in little more than a byte.
  Workload work(std::chrono::microseconds(20));
  ServerOptions o;
  o.max_clients = 2;
  o.max_capture_bytes = 4096;
  CaptureHub hub(o);
  auto a = hub.Join(Request(400), "a");
  ASSERT_TRUE(a.ok());
  auto b = hub.Join(Request(400), "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(hub.Join(Request(400), "c").status().code(),
            absl::StatusCode::kResourceExhausted);
  absl::Status end;
  const std::string file = Drain(*a, &end);
  // The capture outgrew its 4 KiB: it ended early, with a complete file.
  EXPECT_EQ(end.code(), absl::StatusCode::kResourceExhausted) << end;
  auto reader = trace_format::TraceReader::OpenBuffer(file, "limited");
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->report().has_index);
  hub.Leave(*a);
  hub.Leave(*b);
  EXPECT_EQ(hub.Join(Request(-1), "d").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace podscope::profiler::internal
