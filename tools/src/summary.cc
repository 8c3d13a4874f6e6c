#include "summary.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/clock_model.h"
#include "podscope/viewer/analysis_labels.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/slice_columns.h"
#include "podscope/viewer/trace_store.h"
#include "summary_steps.h"

namespace podscope::tools {
namespace {

using trace_format::ClockModel;
using trace_format::Slice;
using trace_format::TraceReader;
using trace_format::TrackEvents;

// The local time range of a track's events, if it has any.
struct LocalRange {
  bool any = false;
  int64_t min_ns = std::numeric_limits<int64_t>::max();
  int64_t max_ns = std::numeric_limits<int64_t>::min();
  void Add(int64_t lo, int64_t hi) {
    any = true;
    min_ns = std::min(min_ns, lo);
    max_ns = std::max(max_ns, hi);
  }
};

LocalRange RangeOf(const TrackEvents& e) {
  LocalRange r;
  // Slices are sorted by start, but any of them may end last.
  for (const Slice& s : e.slices) r.Add(s.start_ns, s.end_ns());
  if (!e.instants.empty()) {
    r.Add(e.instants.front().ts_ns, e.instants.back().ts_ns);
  }
  if (!e.counters.empty()) {
    r.Add(e.counters.front().ts_ns, e.counters.back().ts_ns);
  }
  if (!e.samples.empty())
    r.Add(e.samples.front().ts_ns, e.samples.back().ts_ns);
  return r;
}

TrackSummary DescribeTrack(const TraceReader& reader, uint32_t id) {
  TrackSummary t;
  t.id = id;
  if (const auto* track = reader.FindTrack(id)) {
    t.kind = track->kind();
    t.name = track->name();
  }
  if (t.name.empty()) t.name = "track " + std::to_string(id);
  auto it = reader.drop_counts().find(id);
  if (it != reader.drop_counts().end()) t.dropped = it->second;
  return t;
}

// Adds one device stream's collectives.
void AddCollectives(const TraceReader& reader, const TrackSummary& track,
                    const TrackEvents& e, RankActivity* a) {
  if (track.kind == trace_format::proto::TRACK_KIND_DEVICE_STREAM) {
    uint32_t wait_key = 0;
    for (const trace_format::EventArgs& args : e.args) {
      if (args.kind != trace_format::EventKind::kSlice ||
          args.index >= e.slices.size()) {
        continue;
      }
      for (const trace_format::Arg& arg : args.args) {
        if (wait_key == 0) {
          if (reader.GetString(arg.key) != "wait_ns") continue;
          wait_key = arg.key;
        }
        if (arg.key != wait_key) continue;
        const int64_t* wait = std::get_if<int64_t>(&arg.value);
        if (wait == nullptr) continue;
        ++a->collectives;
        a->collective_ns += e.slices[args.index].duration_ns;
        a->collective_wait_ns += *wait;
      }
    }
  }
}

void FinishActivity(std::vector<int64_t> durations, RankActivity* a) {
  a->steps = durations.size();
  if (durations.empty()) return;
  for (int64_t d : durations) {
    a->step_total_ns += d;
    a->step_max_ns = std::max(a->step_max_ns, d);
  }
  auto mid = durations.begin() + durations.size() / 2;
  std::nth_element(durations.begin(), mid, durations.end());
  a->step_median_ns = *mid;
}

// The capture's account of how it lined up a host without clock probes.
void ReadAlignment(const trace_format::proto::Metadata& m, ProcessSummary* p) {
  const auto& a = m.attributes();
  auto method = a.find("clock_alignment");
  if (method == a.end()) return;
  p->clock_alignment = method->second;
  auto number = [&](const char* key) -> int64_t {
    auto it = a.find(key);
    int64_t v = -1;
    if (it == a.end() || !absl::SimpleAtoi(it->second, &v) || v < 0) return -1;
    return v;
  };
  p->clock_alignment_uncertainty_ns = number("clock_alignment_uncertainty_ns");
  p->clock_alignment_relative_uncertainty_ns =
      number("clock_alignment_relative_uncertainty_ns");
  if (auto note = a.find("clock_alignment_note"); note != a.end()) {
    p->clock_alignment_note = note->second;
  }
}

// Summarises one file, adding its slices to `names`. Returns the track
// ranges through `local` so the caller can place the file in time.
ProcessSummary SummarizeFile(const TraceReader& reader,
                             const SummaryOptions& options,
                             NameStatsTable* names, LocalRange* local) {
  ProcessSummary p;
  p.path = reader.name();
  const auto& m = reader.metadata();
  p.host = m.host();
  p.pid = m.pid();
  p.process_index = m.process_index();
  p.process_count = m.process_count();
  p.session_id = m.session_id();
  p.command_line.assign(m.command_line().begin(), m.command_line().end());
  p.dropped = reader.total_dropped();
  for (const auto& offset : reader.clock().offsets()) {
    if (!p.has_clock_offsets) {
      p.clock_offset_ns = offset.offset_ns();
      // The model's bound, not the record's number: never below the floor
      // of how well two clocks compare, whatever an older writer stored.
      p.clock_uncertainty_ns = trace_format::ClockModel(reader.clock())
                                   .UncertaintyAt(offset.local_monotonic_ns());
    }
    p.has_clock_offsets = true;
    if (p.reference_clock.empty()) p.reference_clock = offset.reference();
  }
  if (p.has_clock_offsets) {
    p.clock_drift_ppm = trace_format::ClockModel(reader.clock()).DriftPpm();
  }
  ReadAlignment(m, &p);

  std::vector<TrackEvents> tracks = reader.ReadAllTracks(options.threads);
  absl::flat_hash_map<uint32_t, size_t> summary_of;
  StepWindows steps;
  for (TrackEvents& e : tracks) {
    summary_of[e.track_id] = p.tracks.size();
    TrackSummary t = DescribeTrack(reader, e.track_id);
    t.slices = e.slices.size();
    t.instants = e.instants.size();
    t.counters = e.counters.size();
    t.samples = e.samples.size();
    p.events += t.events();
    p.tracks.push_back(std::move(t));
    const LocalRange r = RangeOf(e);
    if (r.any) local->Add(r.min_ns, r.max_ns);
    names->AddTrack(e.slices,
                    [&](uint32_t id) { return reader.GetString(id); });
    steps.AddTrack(reader, p.tracks.back().kind, e);
    AddCollectives(reader, p.tracks.back(), e, &p.activity);
    if (p.tracks.back().kind == trace_format::proto::TRACK_KIND_THREAD) {
      AddSpmdCollectives(reader, e, &p.spmd_collectives);
    }
    // Free each track's events as soon as they are counted.
    e = TrackEvents();
  }
  // Drops on a track that never got an event (or no track at all) still
  // belong in the report.
  for (const auto& [id, dropped] : reader.drop_counts()) {
    if (dropped == 0 || summary_of.contains(id)) continue;
    p.tracks.push_back(DescribeTrack(reader, id));
  }
  FinishActivity(steps.Durations(), &p.activity);
  // Reading every chunk is what finds damaged ones, so the report is taken
  // after it.
  p.recovery = reader.report();
  return p;
}

}  // namespace

void NameStatsTable::AddTrack(
    std::span<const Slice> slices,
    const std::function<std::string_view(uint32_t)>& name_of) {
  if (slices.empty()) return;
  const std::vector<int64_t> self = viewer::ComputeSelfTimes(slices);
  // Aggregate by id first: one string lookup per name and track instead of
  // one per slice.
  absl::flat_hash_map<uint32_t, viewer::SliceTimeStats> by_id;
  for (size_t i = 0; i < slices.size(); ++i) {
    by_id[slices[i].name].Add(slices[i].duration_ns, self[i]);
  }
  for (const auto& [id, st] : by_id) {
    std::string name(name_of(id));
    SliceNameStats& into = by_name_[name];
    if (into.count == 0) into.name = name;
    into.Merge(st);
  }
}

std::vector<SliceNameStats> NameStatsTable::Top(size_t limit) const {
  std::vector<SliceNameStats> out;
  out.reserve(by_name_.size());
  for (const auto& [name, st] : by_name_) out.push_back(st);
  auto longer = [](const SliceNameStats& a, const SliceNameStats& b) {
    if (a.total_ns != b.total_ns) return viewer::LongerTotal(a, b);
    return a.name < b.name;
  };
  if (limit != 0 && limit < out.size()) {
    std::partial_sort(out.begin(), out.begin() + limit, out.end(), longer);
    out.resize(limit);
  } else {
    std::sort(out.begin(), out.end(), longer);
  }
  return out;
}

std::string_view TrackKindName(trace_format::proto::TrackKind kind) {
  switch (kind) {
    case trace_format::proto::TRACK_KIND_THREAD:
      return "thread";
    case trace_format::proto::TRACK_KIND_DEVICE_STREAM:
      return "device stream";
    case trace_format::proto::TRACK_KIND_COUNTER:
      return "counter";
    default:
      return "unspecified";
  }
}

TraceSummary Summarize(std::span<const TraceReader* const> readers,
                       std::vector<UnreadableFile> unreadable,
                       const SummaryOptions& options) {
  TraceSummary summary;
  summary.unreadable = std::move(unreadable);
  summary.clocks.requested = options.align_clocks;
  summary.clocks.files = readers.size();
  NameStatsTable names;
  std::set<std::string> references;
  std::map<std::string, size_t> hosts;
  for (size_t i = 0; i < readers.size(); ++i) {
    const TraceReader& reader = *readers[i];
    LocalRange local;
    ProcessSummary p = SummarizeFile(reader, options, &names, &local);
    if (p.has_clock_offsets) {
      ++summary.clocks.files_with_offsets;
      if (!p.reference_clock.empty()) references.insert(p.reference_clock);
    }
    if (local.any) {
      const ClockModel clock =
          options.align_clocks ? ClockModel(reader.clock()) : ClockModel();
      p.has_events = true;
      p.first_ns = clock.ToReference(local.min_ns);
      p.last_ns = clock.ToReference(local.max_ns);
      if (!summary.has_events || p.first_ns < summary.first_ns) {
        summary.first_ns = p.first_ns;
        summary.first_realtime_ns =
            ClockModel(reader.clock()).ToRealtime(local.min_ns);
      }
      summary.last_ns =
          summary.has_events ? std::max(summary.last_ns, p.last_ns) : p.last_ns;
      summary.has_events = true;
    }
    summary.total_events += p.events;
    summary.total_dropped += p.dropped;
    ++hosts[p.host];
    summary.processes.push_back(std::move(p));
    if (options.progress) options.progress(i + 1, readers.size());
  }
  summary.clocks.references.assign(references.begin(), references.end());
  for (const auto& [name, count] : hosts) {
    summary.hosts.push_back({name, count});
  }
  std::sort(summary.processes.begin(), summary.processes.end(),
            [](const ProcessSummary& a, const ProcessSummary& b) {
              return a.path < b.path;
            });
  summary.top_names = names.Top(options.top_names);
  summary.distinct_names = names.size();
  return summary;
}

namespace {

// Two or more processes of one job that ran steps or collectives.
bool HasSeveralRanks(const TraceSummary& summary) {
  size_t ranks = 0;
  for (const ProcessSummary& p : summary.processes) {
    if (p.process_count >= 2 &&
        (p.activity.steps > 0 || p.activity.collectives > 0)) {
      ++ranks;
    }
  }
  return ranks >= 2;
}

// The straggler verdict, computed where the analyses and the viewer
// compute it: on a store of the same files.
void JudgeStraggler(const std::string& path, const SummaryOptions& options,
                    TraceSummary* summary) {
  viewer::OpenOptions open;
  open.align_clocks = options.align_clocks;
  open.threads = options.threads;
  auto store = viewer::TraceStore::Open(path, open);
  if (!store.ok()) {
    summary->verdict = absl::StrCat("no verdict: ", store.status().message());
    return;
  }
  if ((*store)->processes().size() != summary->processes.size()) {
    // A logdir of several sessions: the store holds its newest one only.
    summary->verdict = absl::StrCat(
        "no verdict: the newest session holds ", (*store)->processes().size(),
        " of the ", summary->processes.size(),
        " processes summarised; run `podscope analyze` on one session folder");
    return;
  }
  const viewer::StepBreakdown steps = viewer::AnalyzeSteps(**store);
  const viewer::StragglerReport report =
      viewer::AnalyzeStragglers(**store, steps);
  summary->verdict = viewer::StragglerVerdict(steps, report);
  if (report.straggler) {
    summary->straggler_rank = steps.ranks[report.straggler->rank].rank;
  }
}

}  // namespace

absl::StatusOr<TraceSummary> SummarizePath(const std::string& path,
                                           const SummaryOptions& options) {
  PODSCOPE_ASSIGN_OR_RETURN(auto opened, trace_format::OpenTraces(path));
  std::vector<const TraceReader*> readers;
  for (const auto& r : opened.readers) readers.push_back(r.get());
  std::vector<UnreadableFile> unreadable;
  for (const auto& [file, status] : opened.failures) {
    unreadable.push_back({file, std::string(status.message())});
  }
  TraceSummary summary = Summarize(readers, std::move(unreadable), options);
  if (HasSeveralRanks(summary)) JudgeStraggler(path, options, &summary);
  return summary;
}

}  // namespace podscope::tools
