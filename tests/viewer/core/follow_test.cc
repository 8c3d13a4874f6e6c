// Following files while they are written: a store grown refresh by refresh
// holds the same events, tracks, names and level-of-detail answers as the
// final file loaded at once; files that appear later are added; a file that
// is not a trace is reported without losing the others.
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/trace_format/writer.h"
#include "podscope/viewer/lod.h"
#include "podscope/viewer/trace_follower.h"
#include "podscope/viewer/trace_store.h"
#include "trace_gen.h"

namespace podscope::viewer {
namespace {

namespace fs = std::filesystem;
namespace tf = trace_format;

// A recorder-like writer: nested scopes closed in end order, several
// threads, instants, a counter, arguments and a flow pair, flushed in
// pieces so the file grows chunk by chunk.
class GrowingFile {
 public:
  GrowingFile(const std::string& path, const std::string& host, int64_t pid) {
    tf::WriterOptions options;
    options.chunk_events = 1 << 20;  // chunks only when flushed
    writer_ = *tf::TraceWriter::Create(path, options);
    tf::proto::Metadata m;
    m.set_host(host);
    m.set_pid(pid);
    m.set_process_index(static_cast<int32_t>(pid % 10));
    writer_->SetMetadata(m);
    for (int t = 0; t < 3; ++t) {
      tf::proto::Track track;
      track.set_kind(tf::proto::TRACK_KIND_THREAD);
      track.set_name("thread " + std::to_string(t));
      track.set_tid(pid * 10 + t);
      track.set_sort_index(2 - t);
      threads_.push_back(writer_->AddTrack(track));
    }
    tf::proto::Track counter;
    counter.set_kind(tf::proto::TRACK_KIND_COUNTER);
    counter.set_name("memory");
    counter_ = writer_->AddTrack(counter);
    for (const char* n : {"step", "forward", "backward", "matmul", "send"}) {
      names_.push_back(writer_->InternString(n));
    }
  }

  // One step on every thread: a step scope enclosing ops, children
  // written before their parent; with `late_parent`, the step's slice is
  // held back until the next step (a scope still open at the flush).
  void Step(bool late_parent) {
    for (size_t t = 0; t < threads_.size(); ++t) {
      const int64_t start = now_ + static_cast<int64_t>(t) * 7;
      const int64_t op = 1000 + 100 * static_cast<int64_t>(t);
      writer_->AddSlice(threads_[t], start + 10, op, names_[3]);
      writer_->AddSlice(threads_[t], start + 10 + op, op, names_[3]);
      writer_->AddSlice(threads_[t], start + 5, 2 * op + 20, names_[1]);
      const tf::Arg arg{names_[4], int64_t{step_}};
      const tf::EventRef back = writer_->AddSlice(
          threads_[t], start + 2 * op + 40, op / 2, names_[2], {&arg, 1});
      if (t == 0) writer_->AddFlow(back, 1000 + step_, tf::FlowPhase::kBegin);
      if (t == 1) writer_->AddFlow(back, 1000 + step_, tf::FlowPhase::kEnd);
      writer_->AddInstant(threads_[t], start + 3, names_[4]);
      const int64_t step_len = 3 * op;
      if (late_parent) {
        held_.push_back({threads_[t], start, step_len});
      } else {
        writer_->AddSlice(threads_[t], start, step_len, names_[0]);
      }
    }
    writer_->AddCounter(counter_, now_, static_cast<double>(step_ % 7));
    now_ += 5000;
    ++step_;
  }
  void ReleaseHeld() {
    for (const auto& [track, start, len] : held_) {
      writer_->AddSlice(track, start, len, names_[0]);
    }
    held_.clear();
  }
  // An offset to a reference clock ("job"), as a job's process adds them
  // while it records.
  void AddOffset(int64_t offset_ns) {
    tf::proto::ClockOffset o;
    o.set_local_monotonic_ns(now_);
    o.set_offset_ns(offset_ns);
    o.set_reference("job");
    writer_->AddClockOffset(o);
  }
  void Flush() { ASSERT_TRUE(writer_->Flush().ok()); }
  void Close() {
    ReleaseHeld();
    ASSERT_TRUE(writer_->Close().ok());
  }

 private:
  std::unique_ptr<tf::TraceWriter> writer_;
  std::vector<uint32_t> threads_;
  uint32_t counter_ = 0;
  std::vector<uint32_t> names_;
  std::vector<std::tuple<uint32_t, int64_t, int64_t>> held_;
  int64_t now_ = 1'000'000;
  int64_t step_ = 0;
};

// Everything a user could see of a track, with names as text.
struct TrackView {
  std::vector<std::tuple<int64_t, int64_t, std::string, uint32_t>> slices;
  std::vector<std::pair<int64_t, std::string>> instants;
  std::vector<std::pair<int64_t, double>> counters;
  std::vector<std::string> args;  // "slice@start: key=value"
  size_t flows = 0;
  std::vector<std::string> lod;  // visible slices at a few zooms
};

std::map<std::string, TrackView> Describe(const TraceStore& s) {
  std::map<std::string, TrackView> out;
  for (const TrackInfo& t : s.tracks()) {
    const ProcessInfo& p = s.processes()[t.process];
    TrackView v;
    const TrackData& d = s.data(t.id);
    for (uint32_t i = 0; i < d.slices.size(); ++i) {
      v.slices.emplace_back(d.slices.start(i), d.slices.duration(i),
                            std::string(s.str(d.slices.name(i))),
                            d.slices.depth(i));
    }
    for (uint32_t i = 0; i < d.instants.size(); ++i) {
      v.instants.emplace_back(d.instants.ts[i],
                              std::string(s.str(d.instants.names[i])));
    }
    for (uint32_t i = 0; i < d.counters.size(); ++i) {
      v.counters.emplace_back(d.counters.ts[i], d.counters.values[i]);
    }
    for (const tf::EventArgs& a : d.args) {
      const EventRef e{t.id, a.kind, a.index};
      for (const tf::Arg& arg : a.args) {
        v.args.push_back(std::string(s.str(s.NameOf(e))) + "@" +
                         std::to_string(s.StartOf(e)) + ": " +
                         std::string(s.str(arg.key)) + "=" +
                         std::to_string(std::get<int64_t>(arg.value)));
      }
    }
    for (uint32_t i = 0; i < d.slices.size(); ++i) {
      v.flows += s.Flows({t.id, tf::EventKind::kSlice, i}).size();
    }
    for (uint32_t pixels : {50u, 400u, 3000u}) {
      for (const VisibleSlice& vs :
           QuerySlices(d.slices, s.first_ns(), s.last_ns() + 1, pixels)) {
        v.lod.push_back(
            std::to_string(vs.depth) + ":" + std::to_string(vs.start_ns) + "+" +
            std::to_string(vs.duration_ns) + " " + std::string(s.str(vs.name)));
      }
    }
    out[p.path + "#" + t.name] = std::move(v);
  }
  return out;
}

void ExpectSameStore(const TraceStore& live, const TraceStore& loaded) {
  EXPECT_EQ(live.event_count(), loaded.event_count());
  EXPECT_EQ(live.first_ns(), loaded.first_ns());
  EXPECT_EQ(live.last_ns(), loaded.last_ns());
  ASSERT_EQ(live.processes().size(), loaded.processes().size());
  ASSERT_EQ(live.tracks().size(), loaded.tracks().size());
  const auto a = Describe(live);
  const auto b = Describe(loaded);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, view] : b) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(a.contains(key));
    const TrackView& mine = a.at(key);
    EXPECT_EQ(mine.slices, view.slices);
    EXPECT_EQ(mine.instants, view.instants);
    EXPECT_EQ(mine.counters, view.counters);
    EXPECT_EQ(mine.args, view.args);
    EXPECT_EQ(mine.flows, view.flows);
    EXPECT_EQ(mine.lod, view.lod);
  }
  // Track order within each process, as the timeline lists them.
  for (size_t p = 0; p < live.processes().size(); ++p) {
    std::vector<std::string> x, y;
    for (TrackId t : live.processes()[p].tracks) {
      x.push_back(live.tracks()[t].name);
    }
    for (TrackId t : loaded.processes()[p].tracks) {
      y.push_back(loaded.tracks()[t].name);
    }
    EXPECT_EQ(x, y);
  }
}

TEST(TraceFollowerTest, GrowingFileEndsAsTheFinalFileLoadedAtOnce) {
  const std::string dir = testing::TempDir("follow_growing");
  const std::string path = dir + "/hostA.11.podtrace";
  GrowingFile file(path, "hostA", 11);
  TraceFollower follower(dir);
  ASSERT_TRUE(follower.Refresh().ok());  // header only so far
  uint64_t last_count = 0;
  int64_t last_end = 0;
  for (int round = 0; round < 12; ++round) {
    // Half the rounds end with a step scope still open at the flush.
    const bool late = round % 2 == 1;
    for (int s = 0; s < 20; ++s) {
      file.ReleaseHeld();
      file.Step(late && s == 19);
    }
    file.Flush();
    auto update = follower.Refresh();
    ASSERT_TRUE(update.ok()) << update.status();
    EXPECT_GT(update->events_added, 0u) << "round " << round;
    const TraceStore& s = *follower.store();
    EXPECT_GT(s.event_count(), last_count) << "round " << round;
    EXPECT_GT(s.last_ns(), last_end) << "round " << round;
    last_count = s.event_count();
    last_end = s.last_ns();
    EXPECT_FALSE(follower.all_final());
    // Nothing new: a refresh reads nothing.
    auto again = follower.Refresh();
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->changed());
  }
  file.Close();
  auto update = follower.Refresh();
  ASSERT_TRUE(update.ok());
  EXPECT_EQ(update->files_finished, 1u);
  EXPECT_TRUE(follower.all_final());
  EXPECT_TRUE(follower.store()->problems().empty());

  auto loaded = TraceStore::Open(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectSameStore(*follower.store(), **loaded);
}

TEST(TraceFollowerTest, ClockOffsetsAddedWhileRecordingEndAsLoadedAtOnce) {
  const std::string dir = testing::TempDir("follow_clock");
  const std::string path = dir + "/hostC.7.podtrace";
  GrowingFile file(path, "hostC", 7);
  TraceFollower follower(dir);
  uint64_t reread = 0;
  for (int round = 0; round < 8; ++round) {
    // Offsets arrive from the third round on, drifting.
    if (round >= 2) file.AddOffset(5'000'000 + round * 1'000);
    for (int s = 0; s < 10; ++s) file.Step(false);
    file.Flush();
    auto update = follower.Refresh();
    ASSERT_TRUE(update.ok()) << update.status();
    reread += update->files_reread;
    if (round >= 2) {
      EXPECT_TRUE(follower.store()->processes()[0].clock_aligned);
      EXPECT_EQ(follower.store()->processes()[0].reference_clock, "job");
    }
  }
  // Read again once, when the offsets first appeared; later offsets only
  // place new events until the file is closed.
  EXPECT_EQ(reread, 1u);
  file.AddOffset(5'100'000);
  file.Close();
  auto last = follower.Refresh();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->files_reread, 1u);
  auto loaded = TraceStore::Open(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->processes()[0].clock_aligned);
  ExpectSameStore(*follower.store(), **loaded);
}

TEST(TraceFollowerTest, FilesThatAppearLaterAreAddedAsProcesses) {
  const std::string dir = testing::TempDir("follow_later");
  TraceFollower follower(dir + "/not-yet");  // the folder comes later
  auto empty = follower.Refresh();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(follower.store()->processes().size(), 0u);

  fs::create_directories(dir + "/not-yet");
  GrowingFile a(dir + "/not-yet/hostA.1.podtrace", "hostA", 1);
  for (int s = 0; s < 10; ++s) a.Step(false);
  a.Flush();
  auto first = follower.Refresh();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->files_added, 1u);
  EXPECT_EQ(follower.store()->hosts().size(), 1u);

  GrowingFile b(dir + "/not-yet/hostB.2.podtrace", "hostB", 2);
  for (int s = 0; s < 10; ++s) b.Step(false);
  b.Flush();
  // Not a trace at all: reported, the others kept.
  std::ofstream(dir + "/not-yet/junk.podtrace") << "this is not a trace file";
  auto second = follower.Refresh();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->files_added, 1u);
  const TraceStore& s = *follower.store();
  ASSERT_EQ(s.hosts().size(), 2u);
  EXPECT_EQ(s.hosts()[1].name, "hostB");
  ASSERT_EQ(s.problems().size(), 1u);
  EXPECT_NE(s.problems()[0].path.find("junk.podtrace"), std::string::npos);
  EXPECT_FALSE(s.problems()[0].loaded);

  a.Close();
  b.Close();
  fs::remove(dir + "/not-yet/junk.podtrace");
  ASSERT_TRUE(follower.Refresh().ok());
  EXPECT_TRUE(follower.all_final());
  auto loaded = TraceStore::Open(dir + "/not-yet");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectSameStore(*follower.store(), **loaded);
}

TEST(TraceFollowerTest, APathThatIsNeitherFileNorFolderIsAnError) {
  TraceFollower follower("/dev/null");
  auto r = follower.Refresh();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/dev/null"), std::string::npos);
}

}  // namespace
}  // namespace podscope::viewer
