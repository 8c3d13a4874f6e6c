// AnalyzePodByHost: the pod analyses of a big session a host at a time, so
// that memory holds one host's events per thread and the summaries of all
// (pod_analysis.h). Each host's files are loaded as a store of their own,
// measured as AnalyzePod would measure those ranks, and dropped; the ids in
// the measurements (ranks, tracks, host) are then moved to the whole
// session's, which orders processes and tracks the same way.
#include <algorithm>
#include <limits>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis_pod_util.h"
#include "podscope/base/parallel.h"

namespace podscope::viewer {
namespace {

// What one host's events give, with its own store's ids: ranks are its
// processes, tracks its tracks, its host is 0.
struct HostPart {
  absl::Status status;
  size_t tracks = 0;
  uint64_t events = 0;
  int64_t first_ns = 0;
  pod::RankCells cells;
  std::vector<std::vector<pod::Arrival>> arrivals;
  std::vector<pod::FoundCompile> compiles;
  TopWork top;
  OpProfile ops;
  std::vector<DeviceMemory> memory;
  std::vector<LoadProblem> problems;
};

// The files of host `h` of `session`, as a store of their own.
absl::StatusOr<std::unique_ptr<TraceStore>> OpenHost(const TraceStore& session,
                                                     HostId h) {
  OpenOptions options;
  options.threads = 1;  // hosts are read in parallel instead
  const HostInfo& host = session.hosts()[h];
  for (ProcessId p : host.processes) {
    options.files.push_back(session.processes()[p].path);
  }
  auto store = TraceStore::Open(session.session().path, options);
  if (!store.ok()) return store.status();
  if ((*store)->processes().size() != host.processes.size()) {
    return absl::DataLossError(
        absl::StrCat("host ", host.name, ": ", host.processes.size(),
                     " trace files were listed but ",
                     (*store)->processes().size(), " could be read"));
  }
  return store;
}

void MeasureHost(const TraceStore& store, const PodAnalysisOptions& options,
                 HostPart* part) {
  part->tracks = store.tracks().size();
  part->events = store.event_count();
  part->first_ns = store.first_ns();
  part->problems = store.problems();
  part->cells = pod::MeasureRankSteps(store);
  // A rank's step totals do not depend on how rows are matched, and the
  // top work's share of step time needs only this host's.
  const StepBreakdown local =
      pod::BuildStepBreakdown(PodRanks(store), part->cells);
  part->arrivals = pod::FindAllArrivals(store);
  part->compiles = pod::FindCompiles(store);
  part->top = AnalyzeTopWork(store, local, options);
  part->ops = AnalyzeOps(store, options);
  part->memory = AnalyzeMemory(store, options);
}

// Moves a host's measurements onto the session's ids.
struct Offsets {
  HostId host = 0;
  int rank = 0;
  TrackId track = 0;
};

void Relabel(const Offsets& at, HostPart* part) {
  for (auto& rank : part->cells) {
    for (StepCell& c : rank) c.event.track += at.track;
  }
  for (auto& rank : part->arrivals) {
    for (pod::Arrival& a : rank) {
      a.a.rank += at.rank;
      a.a.event.track += at.track;
    }
  }
  for (pod::FoundCompile& f : part->compiles) {
    f.e.rank += at.rank;
    f.e.event.track += at.track;
  }
  for (auto* list : {&part->top.host_scopes, &part->top.device_ops}) {
    for (WorkEntry& e : *list) e.host = at.host;
  }
  for (RankOverlap& o : part->top.overlap) o.rank += at.rank;
  for (HostPeak& p : part->ops.peaks) p.host = at.host;
  for (auto* list : {&part->ops.by_name, &part->ops.by_kind}) {
    for (RooflineEntry& e : *list) e.host = at.host;
  }
  for (DeviceMemory& m : part->memory) {
    m.rank += at.rank;
    m.host = at.host;
  }
}

template <typename T>
void Append(std::vector<T>* into, std::vector<T>* from) {
  into->insert(into->end(), std::make_move_iterator(from->begin()),
               std::make_move_iterator(from->end()));
  from->clear();
  from->shrink_to_fit();
}

// The straggler's longer scopes: its own times in the rows it was last in,
// then every other rank's in the same rows, a host at a time.
absl::Status FindLongerScopes(const TraceStore& session,
                              const StepBreakdown& steps,
                              const std::vector<int>& rows,
                              const PodAnalysisOptions& options, int threads,
                              Straggler* straggler) {
  const int s = straggler->rank;
  std::vector<pod::RowScopes> scopes;
  std::vector<int> scope_rows;
  for (int row : rows) {
    if (!steps.rows[row].ranks[s].present) continue;
    scope_rows.push_back(row);
    scopes.emplace_back().step = steps.rows[row].step;
  }
  std::mutex mutex;
  // Adds host h's ranks (its own, first, when `own`).
  auto add_host = [&](HostId h, bool own) -> absl::Status {
    auto store = OpenHost(session, h);
    if (!store.ok()) return store.status();
    const pod::Keys keys(**store);
    const std::vector<ProcessId>& procs = session.hosts()[h].processes;
    for (size_t local = 0; local < procs.size(); ++local) {
      const int r = static_cast<int>(procs[local]);
      if ((r == s) != own) continue;
      for (size_t k = 0; k < scope_rows.size(); ++k) {
        const StepCell& cell = steps.rows[scope_rows[k]].ranks[r];
        if (!cell.present) continue;
        pod::NamedTimes t = pod::CellScopeTimes(
            **store, static_cast<ProcessId>(local), keys, cell);
        std::lock_guard<std::mutex> lock(mutex);
        if (own) {
          scopes[k].own = std::move(t);
        } else {
          scopes[k].AddOther(t);
        }
      }
    }
    return absl::OkStatus();
  };
  const HostId own_host = steps.ranks[s].host;
  if (absl::Status st = add_host(own_host, true); !st.ok()) return st;
  std::vector<absl::Status> status(session.hosts().size());
  base::ParallelFor(
      base::ThreadCount(threads), session.hosts().size(),
      [&](size_t h) { status[h] = add_host(static_cast<HostId>(h), false); });
  for (const absl::Status& st : status) {
    if (!st.ok()) return st;
  }
  straggler->longer_scopes = pod::LongerScopesOf(scopes, options);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PodAnalysis> AnalyzePodByHost(
    const TraceStore& session, const PodAnalysisOptions& options, int threads,
    std::vector<LoadProblem>* problems,
    const std::function<void(size_t, size_t)>& progress) {
  const size_t hosts = session.hosts().size();
  std::vector<HostPart> parts(hosts);
  std::mutex progress_mutex;
  size_t done = 0;
  base::ParallelFor(base::ThreadCount(threads), hosts, [&](size_t h) {
    auto store = OpenHost(session, static_cast<HostId>(h));
    if (!store.ok()) {
      parts[h].status = store.status();
    } else {
      MeasureHost(**store, options, &parts[h]);
    }
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(++done, hosts);
    }
  });

  PodAnalysis out;
  pod::RankCells cells;
  std::vector<std::vector<pod::Arrival>> arrivals;
  std::vector<pod::FoundCompile> compiles;
  Offsets at;
  int64_t first = std::numeric_limits<int64_t>::max();
  for (size_t h = 0; h < hosts; ++h) {
    HostPart& part = parts[h];
    if (!part.status.ok()) return part.status;
    at.host = static_cast<HostId>(h);
    Relabel(at, &part);
    at.rank += static_cast<int>(session.hosts()[h].processes.size());
    at.track += static_cast<TrackId>(part.tracks);
    if (part.events > 0) first = std::min(first, part.first_ns);
    out.events += part.events;
    Append(&cells, &part.cells);
    Append(&arrivals, &part.arrivals);
    Append(&compiles, &part.compiles);
    Append(&out.top.host_scopes, &part.top.host_scopes);
    Append(&out.top.device_ops, &part.top.device_ops);
    Append(&out.top.overlap, &part.top.overlap);
    Append(&out.ops.peaks, &part.ops.peaks);
    Append(&out.ops.by_name, &part.ops.by_name);
    Append(&out.ops.by_kind, &part.ops.by_kind);
    Append(&out.memory, &part.memory);
    if (problems != nullptr) Append(problems, &part.problems);
  }
  parts.clear();
  out.first_ns = out.events > 0 ? first : 0;
  for (const HostInfo& h : session.hosts()) out.host_names.push_back(h.name);
  out.processes = session.processes().size();

  out.steps = pod::BuildStepBreakdown(PodRanks(session), cells);
  cells.clear();
  std::vector<int> rows;
  out.stragglers = pod::JoinStragglers(out.steps, arrivals, options, &rows);
  arrivals.clear();
  if (out.stragglers.straggler) {
    if (absl::Status s = FindLongerScopes(session, out.steps, rows, options,
                                          threads, &*out.stragglers.straggler);
        !s.ok()) {
      return s;
    }
  }
  out.compiles = pod::JudgeCompiles(out.steps, std::move(compiles), options);
  return out;
}

}  // namespace podscope::viewer
