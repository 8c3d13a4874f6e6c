// A doctor's dump on the timeline (doctor_dump.h): the verdict the ranks
// wrote their journals for, and where each rank was then.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "podscope/base/human_format.h"
#include "podscope/viewer/doctor_dump.h"

namespace podscope::viewer {
namespace {

// The journal's rank in the store: the same host and pid, else the same
// rank (process index).
std::optional<ProcessId> ProcessOf(const RankJournal& j,
                                   const TraceStore& store) {
  std::optional<ProcessId> by_rank;
  for (const ProcessInfo& p : store.processes()) {
    if (j.pid != 0 && p.pid == j.pid &&
        (j.host.empty() || p.host_name == j.host)) {
      return p.id;
    }
    if (p.process_index == j.rank && !by_rank) by_rank = p.id;
  }
  return by_rank;
}

std::optional<TrackId> ThreadTrack(const TraceStore& store, ProcessId process,
                                   int64_t tid) {
  if (tid == 0) return std::nullopt;
  for (TrackId t : store.processes()[process].tracks) {
    const TrackInfo& info = store.tracks()[t];
    if (info.kind == trace_format::proto::TRACK_KIND_THREAD &&
        info.tid == tid) {
      return t;
    }
  }
  return std::nullopt;
}

// The latest entry of the verdict's collective in a rank's journal.
const JournalCallEntry* EntryOf(const RankJournal& j, const JournalVerdict& v) {
  for (auto it = j.entries.rbegin(); it != j.entries.rend(); ++it) {
    if (it->group == v.group && it->sequence == v.sequence) return &*it;
  }
  return nullptr;
}

// Until when a rank's marks run: when it wrote its journal, else its last
// entry's end (journals before version 1 say no time).
int64_t WrittenAt(const RankJournal& j) {
  if (j.written_ns != 0) return j.written_ns;
  int64_t last = 0;
  for (const JournalCallEntry& e : j.entries) {
    last = std::max({last, e.entered_ns, e.finished_ns});
  }
  return last;
}

DoctorMark CollectiveMark(const RankJournal& j, const JournalCallEntry& e) {
  DoctorMark m;
  m.kind = DoctorMarkKind::kCollective;
  m.rank = j.rank;
  m.start_ns = e.entered_ns;
  m.end_ns =
      e.finished_ns != 0 ? e.finished_ns : std::max(e.entered_ns, WrittenAt(j));
  m.label = absl::StrCat(e.kind, " #", e.sequence, " of ", e.group);
  absl::StrAppend(&m.label,
                  e.finished_ns != 0 ? ": finished after " : ": waiting for ",
                  base::FormatDuration(m.end_ns - m.start_ns));
  if (!e.scopes.empty()) {
    absl::StrAppend(&m.label, ", from ", absl::StrJoin(e.scopes, " > "));
  }
  return m;
}

std::optional<DoctorMark> WhereMark(const RankJournal& j) {
  if (!j.where.has_value()) return std::nullopt;
  const JournalWhere& w = *j.where;
  const int64_t end = WrittenAt(j);
  const int64_t start = w.innermost_since_ns != 0 ? w.innermost_since_ns
                        : w.last_event_ns != 0    ? w.last_event_ns
                                                  : end;
  if (end == 0 || start > end) return std::nullopt;
  DoctorMark m;
  m.kind = DoctorMarkKind::kWhere;
  m.rank = j.rank;
  m.start_ns = start;
  m.end_ns = end;
  m.label = absl::StrCat(
      w.scopes.empty() ? "in no traced scope"
                       : absl::StrCat("in ", absl::StrJoin(w.scopes, " > ")),
      " for ", base::FormatDuration(end - start));
  return m;
}

// The verdict of the journal written last: every rank writes its file for
// each new verdict, so a later verdict replaces an earlier one.
JournalVerdict LatestVerdict(const DoctorDump& dump) {
  const RankJournal* latest = nullptr;
  for (const RankJournal& j : dump.journals) {
    if (j.verdict.kind.empty()) continue;
    if (latest == nullptr || WrittenAt(j) > WrittenAt(*latest)) latest = &j;
  }
  return latest != nullptr ? latest->verdict : JournalVerdict{};
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> DoctorView::span() const {
  if (marks.empty()) return std::nullopt;
  std::pair<int64_t, int64_t> s{marks.front().start_ns, marks.front().end_ns};
  for (const DoctorMark& m : marks) {
    s.first = std::min(s.first, m.start_ns);
    s.second = std::max(s.second, m.end_ns);
  }
  return s;
}

DoctorView BuildDoctorView(const DoctorDump& dump, const TraceStore& store) {
  DoctorView view;
  view.journals = dump.journals.size();
  view.problems = dump.problems;
  view.verdict = LatestVerdict(dump);
  const JournalVerdict& v = view.verdict;
  for (const RankJournal& j : dump.journals) {
    // A journal of another verdict says where the rank was then, not now.
    if (j.verdict.kind != v.kind || j.verdict.group != v.group ||
        j.verdict.sequence != v.sequence || j.verdict.rank != v.rank) {
      continue;
    }
    const std::optional<ProcessId> process = ProcessOf(j, store);
    if (!process) {
      view.problems.push_back(
          absl::StrCat(j.path, ": rank ", j.rank, " (pid ", j.pid,
                       ") has no trace in this folder; its marks are not "
                       "shown"));
      continue;
    }
    std::vector<DoctorMark> marks;
    if (const JournalCallEntry* e = v.sequence >= 0 ? EntryOf(j, v) : nullptr) {
      marks.push_back(CollectiveMark(j, *e));
      marks.back().track = ThreadTrack(store, *process, e->tid);
    }
    if (v.rank >= 0 && j.rank == v.rank) {
      if (std::optional<DoctorMark> m = WhereMark(j)) {
        m->track = ThreadTrack(store, *process, j.where->tid);
        marks.push_back(std::move(*m));
      }
    }
    for (DoctorMark& m : marks) {
      m.process = *process;
      view.marks.push_back(std::move(m));
    }
  }
  return view;
}

}  // namespace podscope::viewer
