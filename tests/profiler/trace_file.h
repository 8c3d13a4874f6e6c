// Reads a profiler session's file back the way a user's tools would.
#ifndef PODSCOPE_TESTS_PROFILER_TRACE_FILE_H_
#define PODSCOPE_TESTS_PROFILER_TRACE_FILE_H_

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "podscope/trace_format/reader.h"

namespace podscope::profiler::testing {

struct TrackView {
  trace_format::proto::Track track;
  trace_format::TrackEvents events;
};

struct TraceFile {
  std::unique_ptr<trace_format::TraceReader> reader;
  std::vector<TrackView> tracks;

  std::string Name(uint32_t id) const {
    return std::string(reader->GetString(id));
  }
  // Tracks whose name is `name`.
  std::vector<const TrackView*> TracksNamed(const std::string& name) const {
    std::vector<const TrackView*> out;
    for (const TrackView& t : tracks) {
      if (t.track.name() == name) out.push_back(&t);
    }
    return out;
  }
  // The first track named `name`, or nullptr.
  const TrackView* Track(const std::string& name) const {
    for (const TrackView& t : tracks) {
      if (t.track.name() == name) return &t;
    }
    return nullptr;
  }
  // The int argument `key` of slice `i` on `t`, or -1.
  int64_t IntArg(const TrackView& t, uint32_t i, const std::string& key) const {
    const auto* args = t.events.FindArgs(trace_format::EventKind::kSlice, i);
    if (args == nullptr) return -1;
    for (const auto& a : args->args) {
      if (Name(a.key) != key) continue;
      if (const auto* v = std::get_if<int64_t>(&a.value)) return *v;
    }
    return -1;
  }
  // The string argument `key` of slice `i` on `t`, or "".
  std::string StringArg(const TrackView& t, uint32_t i,
                        const std::string& key) const {
    const auto* args = t.events.FindArgs(trace_format::EventKind::kSlice, i);
    if (args == nullptr) return "";
    for (const auto& a : args->args) {
      if (Name(a.key) != key) continue;
      if (const auto* v = std::get_if<trace_format::StringId>(&a.value)) {
        return Name(v->id);
      }
    }
    return "";
  }
  // Every slice named `name`, across tracks.
  std::vector<trace_format::Slice> SlicesNamed(const std::string& name) const {
    std::vector<trace_format::Slice> out;
    for (const TrackView& t : tracks) {
      for (const auto& s : t.events.slices) {
        if (Name(s.name) == name) out.push_back(s);
      }
    }
    return out;
  }
};

// An empty TraceFile (reader == nullptr) when the file does not open.
inline TraceFile ReadTraceFile(const std::string& path) {
  TraceFile f;
  auto reader = trace_format::TraceReader::Open(path);
  if (!reader.ok()) return f;
  f.reader = *std::move(reader);
  for (auto& events : f.reader->ReadAllTracks(2)) {
    TrackView v;
    if (const auto* t = f.reader->FindTrack(events.track_id)) v.track = *t;
    v.events = std::move(events);
    f.tracks.push_back(std::move(v));
  }
  return f;
}

// A fresh empty folder under the test's temp dir.
inline std::string FreshDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("podscope-profiler-test-" + std::to_string(getpid())) /
                   name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace podscope::profiler::testing

#endif  // PODSCOPE_TESTS_PROFILER_TRACE_FILE_H_
