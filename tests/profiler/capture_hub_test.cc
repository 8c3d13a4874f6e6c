// The profiler server's concurrent core without gRPC (so that
// ThreadSanitizer sees all of it): clients joining, reading, leaving and
// stopping one shared capture from many threads.
#include "src/server/capture_hub.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/trace_format/reader.h"
#include "src/server/capture_request.h"
#include "workload.h"

namespace podscope::profiler::internal {
namespace {

using testing::Workload;

pb::CaptureRequest Request(int64_t duration_ms,
                           const std::string& session = "") {
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

// A flush after a long backlog can be one piece far over a message: it is
// handed out in parts of at most the size asked for, so that no message
// passes the client's receive limit.
TEST(CaptureStream, APieceOverTheMessageSizeIsSplit) {
  CaptureStream stream(int64_t{1} << 30);
  std::string big(3 * (1 << 20) + 5, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  stream.Append("head");
  stream.Append(big);
  stream.Append("tail");
  stream.Finish(absl::OkStatus());
  std::string received, part;
  size_t cursor = 0;
  pb::CaptureData progress;
  absl::Status end;
  int messages = 0;
  bool done = false;
  while (!done) {
    done = stream.Next(&cursor, &part, 1 << 20, std::chrono::milliseconds(0),
                       &progress, &end);
    EXPECT_LE(part.size(), size_t{1} << 20);
    received += part;
    ASSERT_LT(++messages, 100);
  }
  EXPECT_EQ(received, "head" + big + "tail");
  // "head", three parts of the big piece, and its rest with "tail".
  EXPECT_EQ(messages, 5);
}

// How a client served without a thread of its own learns of new bytes: a
// listener is told of every change for as long as it lives (not only the
// first), of progress when the stream says so, and never once it is gone.
TEST(CaptureStream, ListenersAreToldOfEveryChangeWhileTheyLive) {
  struct Counter : StreamListener {
    std::atomic<int> told{0};
    void StreamChanged() override { told.fetch_add(1); }
  };
  CaptureStream stream(int64_t{1} << 20);
  auto first = std::make_shared<Counter>();
  auto second = std::make_shared<Counter>();
  auto gone = std::make_shared<Counter>();
  stream.Listen(first);
  stream.Listen(gone);
  stream.Listen(second);
  stream.Append("a");
  EXPECT_EQ(gone->told.load(), 1);
  gone.reset();
  stream.Append("b");
  stream.Append("c");
  // Progress is a change only for a stream that tells of it.
  stream.SetProgress(10, 0);
  EXPECT_EQ(first->told.load(), 3);
  stream.TellProgress();
  stream.SetProgress(20, 1);
  stream.SetProgress(20, 1);  // the same counts: nothing new
  stream.Finish(absl::OkStatus());
  EXPECT_EQ(first->told.load(), 5);
  EXPECT_EQ(second->told.load(), 5);
}

TEST(ByteBudget, CopiesShareOneLimitNamedWhenPassed) {
  ByteBudget budget(1000, "max_capture_bytes");
  ByteBudget::Holding a(&budget), b(&budget);
  EXPECT_TRUE(a.Take(600).ok());
  const absl::Status refused = b.Take(600);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("max_capture_bytes"), std::string::npos)
      << refused;
  EXPECT_NE(refused.message().find("1000"), std::string::npos) << refused;
  EXPECT_TRUE(b.Take(400).ok());
  EXPECT_EQ(budget.held(), 1000);
  {
    ByteBudget::Holding c(&budget);
    EXPECT_FALSE(c.Take(1).ok());
  }
  a.Release();
  EXPECT_EQ(budget.held(), 400);
  EXPECT_TRUE(b.Take(600).ok());
}

TEST(CaptureHub, ManyClientsGetTheSameCompleteFile) {
  Workload work;
  ServerOptions o;
  CaptureHub hub(o);
  constexpr int kClients = 6;
  std::vector<std::string> files(kClients);
  std::vector<absl::Status> ends(kClients);
  // When each client asked and when its join returned: the capture began
  // no later than the first join's return and ran at least until every
  // client's deadline.
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> asked(kClients), joined(kClients);
  // The first client asks for long enough that every other one joins while
  // its capture runs, however late a thread starts on a loaded machine (a
  // join after the end gets a capture of its own, a different file); the
  // others join once it has started, each a little later than the one
  // before, and ask for less.
  auto duration_ms = [](int i) { return i == 0 ? 1000 : 150 + 10 * i; };
  std::atomic<bool> first_joined{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      if (i > 0) {
        while (!first_joined.load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * i));
      asked[i] = Clock::now();
      auto c = hub.Join(Request(duration_ms(i), "shared"), "client");
      joined[i] = Clock::now();
      if (i == 0) first_joined.store(true);
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
  EXPECT_EQ((*reader)->metadata().session_id(), "shared");
  // The workload's scopes cover the whole shared capture (it ran until the
  // last client's deadline), with no gap: none was lost between the
  // clients' joins. Each end may lose the scope it cut, a few ms at most.
  // The trace had started when the first join returned, and it ran until
  // every client's duration had passed since that client asked; on a slow
  // machine the first join may return late (starting the trace is the
  // slow part), so this is the one bound that always holds.
  Clock::time_point first_join = joined[0], last_deadline = asked[0];
  for (int i = 0; i < kClients; ++i) {
    first_join = std::min(first_join, joined[i]);
    last_deadline = std::max(
        last_deadline, asked[i] + std::chrono::milliseconds(duration_ms(i)));
  }
  const int64_t window_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(last_deadline -
                                                           first_join)
          .count();
  std::vector<trace_format::Slice> scopes;
  uint64_t events = 0;
  for (const auto& t : (*reader)->ReadAllTracks()) {
    events += t.event_count();
    for (const auto& slice : t.slices) {
      if ((*reader)->GetString(slice.name) == "work") scopes.push_back(slice);
    }
  }
  EXPECT_EQ(events, (*reader)->known_event_count());
  ASSERT_GE(scopes.size(), 2u);
  std::sort(scopes.begin(), scopes.end(), [](const auto& a, const auto& b) {
    return a.start_ns < b.start_ns;
  });
  EXPECT_GE(scopes.back().end_ns() - scopes.front().start_ns,
            window_ns - 20'000'000)
      << scopes.size() << " work scopes; capture window at least "
      << window_ns / 1'000'000 << " ms";
  int64_t largest_gap = 0;
  for (size_t i = 1; i < scopes.size(); ++i) {
    largest_gap =
        std::max(largest_gap, scopes[i].start_ns - scopes[i - 1].end_ns());
  }
  EXPECT_LT(largest_gap, 50'000'000) << "a gap in the recorded work";
  EXPECT_FALSE(IsTracing());
}

// Every limit a request can break is refused, naming it, before anything
// starts; values at the limits are accepted.
TEST(CaptureHub, EveryInvalidRequestIsRefusedByName) {
  ServerOptions o;
  o.max_duration_ms = 5000;
  struct Case {
    const char* what;
    std::function<void(pb::CaptureRequest*)> set;
    const char* message;  // empty: valid
  };
  const std::vector<Case> cases = {
      {"negative duration", [](auto* r) { r->set_duration_ms(-1); },
       "duration_ms must be 0 (until stopped) or positive, not -1"},
      {"duration over the limit", [](auto* r) { r->set_duration_ms(5001); },
       "duration_ms 5001 exceeds this server's limit of 5000 ms"},
      {"duration at the limit", [](auto* r) { r->set_duration_ms(5000); }, ""},
      {"level below 0", [](auto* r) { r->set_level(-1); },
       "level must be 0..3, not -1"},
      {"level above 3", [](auto* r) { r->set_level(4); },
       "level must be 0..3, not 4"},
      {"level 3", [](auto* r) { r->set_level(3); }, ""},
      {"negative sampling", [](auto* r) { r->set_sampling_hz(-5); },
       "sampling_hz must be 0..10000, not -5"},
      {"sampling too fast", [](auto* r) { r->set_sampling_hz(10001); },
       "sampling_hz must be 0..10000, not 10001"},
      {"sampling at the limit", [](auto* r) { r->set_sampling_hz(10000); }, ""},
      {"compression below -1", [](auto* r) { r->set_compression_level(-2); },
       "compression_level must be -1..9, not -2"},
      {"compression above 9", [](auto* r) { r->set_compression_level(10); },
       "compression_level must be -1..9, not 10"},
      {"compression 9", [](auto* r) { r->set_compression_level(9); }, ""},
      {"session with a slash", [](auto* r) { r->set_session_id("a/b"); },
       "session id 'a/b' is not valid"},
      {"session ..", [](auto* r) { r->set_session_id(".."); },
       "session id '..' is not valid"},
      {"session too long",
       [](auto* r) { r->set_session_id(std::string(129, 'x')); },
       "is not valid (1 to 128 of"},
      {"plain session", [](auto* r) { r->set_session_id("step-1:a+b_c.d"); },
       ""},
  };
  for (const Case& c : cases) {
    pb::CaptureRequest r = Request(100);
    c.set(&r);
    const absl::Status s = ValidateCaptureRequest(r, o);
    if (std::string(c.message).empty()) {
      EXPECT_TRUE(s.ok()) << c.what << ": " << s;
      continue;
    }
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos)
        << c.what << ": " << s;
  }
  // The hub refuses them the same way, and starts nothing.
  CaptureHub hub(o);
  for (const Case& c : cases) {
    if (std::string(c.message).empty()) continue;
    pb::CaptureRequest r = Request(100);
    c.set(&r);
    auto joined = hub.Join(r, "bad");
    EXPECT_EQ(joined.status().code(), absl::StatusCode::kInvalidArgument)
        << c.what;
    EXPECT_FALSE(IsTracing()) << c.what;
  }
}

// Clients sharing a trace the process records itself, while that trace
// records from several threads and one client stops the capture: every
// client gets the same complete file of the capture's window only, and the
// local trace goes on.
TEST(CaptureHub, ClientsShareALocalTraceWhileItRecords) {
  const std::string dir =
      ::testing::TempDir() + "/hub-follow-" + std::to_string(getpid());
  ASSERT_TRUE(StartTrace(dir).ok());
  {
    Workload work_a;
    Workload work_b(std::chrono::microseconds(300));
    // The trace records for a while before any capture.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ServerOptions o;
    CaptureHub hub(o);
    constexpr int kClients = 3;
    std::vector<std::string> files(kClients);
    std::vector<absl::Status> ends(kClients);
    const int64_t before_join = MonotonicNs();
    std::atomic<int> joined{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.emplace_back([&, i] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30 * i));
        auto c = hub.Join(Request(0), "client");
        ++joined;
        ASSERT_TRUE(c.ok()) << c.status();
        EXPECT_TRUE((*c)->shares_local_trace);
        files[i] = Drain(*c, &ends[i]);
        hub.Leave(*c);
      });
    }
    // Stopped once every client is in (a join after the stop would get a
    // capture of its own, however late its thread started).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    while (joined.load() < kClients) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    auto stopped = hub.Stop("");
    EXPECT_TRUE(stopped.ok()) << stopped.status();
    for (auto& t : clients) t.join();
    const int64_t after_end = MonotonicNs();
    for (int i = 0; i < kClients; ++i) {
      EXPECT_TRUE(ends[i].ok()) << ends[i];
      EXPECT_EQ(files[i], files[0]) << "client " << i;
    }
    auto reader = trace_format::TraceReader::OpenBuffer(files[0], "shared");
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_TRUE((*reader)->report().has_index);
    EXPECT_TRUE((*reader)->report().skipped.empty());
    uint64_t work = 0;
    for (const auto& t : (*reader)->ReadAllTracks()) {
      for (const auto& slice : t.slices) {
        if ((*reader)->GetString(slice.name) != "work") continue;
        ++work;
        // Only the capture's window: nothing the trace recorded before.
        EXPECT_GE(slice.start_ns, before_join);
        EXPECT_LE(slice.end_ns(), after_end);
      }
    }
    // Two workloads for about 300 ms.
    EXPECT_GT(work, 300u);
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

// A request that arrives once a capture has been told to stop (or reached
// its end) but before it has finished gets a capture of its own, at its
// own level, rather than the end of the old one.
TEST(CaptureHub, RequestDuringAnEndingCaptureGetsItsOwn) {
  Workload work;
  ServerOptions o;
  CaptureHub hub(o);
  for (int round = 0; round < 5; ++round) {
    auto old_capture = hub.Join(Request(5000, "old"), "first");
    ASSERT_TRUE(old_capture.ok()) << old_capture.status();
    ASSERT_TRUE(hub.Stop("old").ok());
    pb::CaptureRequest r = Request(150, "new");
    r.set_join_any_session(true);
    r.set_level(3);
    auto fresh = hub.Join(r, "second");
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    EXPECT_NE(*fresh, *old_capture);
    EXPECT_EQ((*fresh)->session_id, "new");
    absl::Status old_end, fresh_end;
    Drain(*old_capture, &old_end);
    const std::string file = Drain(*fresh, &fresh_end);
    hub.Leave(*old_capture);
    hub.Leave(*fresh);
    EXPECT_TRUE(old_end.ok()) << old_end;
    EXPECT_TRUE(fresh_end.ok()) << fresh_end;
    auto reader = trace_format::TraceReader::OpenBuffer(file, "new");
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->metadata().session_id(), "new");
  }
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
  auto a = hub.Join(Request(3000), "a");
  ASSERT_TRUE(a.ok());
  auto b = hub.Join(Request(3000), "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(hub.Join(Request(3000), "c").status().code(),
            absl::StatusCode::kResourceExhausted);
  absl::Status end;
  const std::string file = Drain(*a, &end);
  // The capture outgrew its 4 KiB long before its 3 s (even on a loaded
  // machine): it ended early, with a complete file.
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
