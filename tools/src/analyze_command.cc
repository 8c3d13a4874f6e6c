// `podscope analyze`: the multi-host analyses of viewer/core
// (pod_analysis.h) over one session, as tables or JSON.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "analyze_print.h"
#include "command.h"
#include "critical_path_print.h"
#include "doctor_print.h"
#include "flags.h"
#include "import_path.h"
#include "podscope/viewer/doctor_dump.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"
#include "text_format.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope analyze [--json] [--top N] [--session NAME] PATH

Analyses one session of a multi-process job: PATH is a trace file, a
session folder, a capture folder (its newest session, or --session), or
other profilers' traces (XSpace, Chrome trace JSON, PyTorch/Kineto), which
are imported first. Prints:
  - steps x ranks: each step's duration per rank, the slowest rank and the
    spread, and per rank where step time went: device compute, collective
    transfer, collective wait, data loading, host work, idle;
  - collectives joined across ranks (by collective_id, else by order): who
    arrived last, by how much, the wait each rank caused, and the verdict:
    the rank whose lateness made the others wait significantly longer than
    anyone else's (a paired t-test over steps on the wait caused), or none,
    with how much of their step time the ranks wait, who arrived last how
    often and the worst wait; for a straggler, the steps and collectives it
    was last at and its scopes longer than the other ranks' median;
  - compiles with cache hits and misses, and for a late miss what changed
    (parameter shapes or dtypes, graph hash) and the step it stalled;
  - the top device ops and host scopes by self time with their share of
    step time, and each rank's communication/computation overlap;
  - per op and op kind: flops, bytes, GFLOP/s, arithmetic intensity and
    the fraction of the host's roofline bound (machine.peak_* attributes);
  - per device: the memory peak, when, and the buffers live at it;
  - with --critical_path, the chain of work across ranks that set one
    step's length (program order, launches, and each collective's wait
    for its last rank), with totals by category and by rank.
docs/analysis.md defines every number.

Flags:
  --json          Print one JSON document (times in ns, shares in [0, 1])
  --top N         Entries per list (default 20, 0: all)
  --session NAME  For a capture folder: the session to analyse
  --critical_path Also the critical path of a step (the slowest after the
                  first, or --step)
  --step N        The step whose critical path is shown
  --what_if SPEC  Re-time that step with one change and print its new
                  length: op:NAME=-20% (every slice named NAME 20 %
                  shorter; +N % longer), collectives=0 (no collective
                  waits for the last rank), loader:R=median (rank R's data
                  loading as long as the ranks' median)
  -h, --help      Show this help

Exit codes: 0 success, 2 usage error, 3 PATH not found or nothing readable
in it, 4 internal or I/O error.
)";

int ExitCodeOf(const absl::Status& status) {
  const absl::StatusCode code = status.code();
  return code == absl::StatusCode::kInternal ||
                 code == absl::StatusCode::kResourceExhausted ||
                 code == absl::StatusCode::kUnknown
             ? kExitInternal
             : kExitUnreadable;
}

// `by_host`: a session of more than one file opens as an overview from the
// files' indexes (no events), for AnalyzePodByHost.
absl::StatusOr<std::unique_ptr<viewer::TraceStore>> OpenForAnalysis(
    const std::string& input, const std::string& session, bool by_host,
    const CommandIo& io) {
  ProgressLine progress(io, "loading", "files");
  viewer::OpenOptions open;
  open.session = session;
  open.progress = [&](const viewer::OpenProgress& p) {
    progress.Update(p.files_done, p.files_total);
  };
  if (by_host) {
    open.detail_files = 1;
    open.overview_from_index = true;
  }
  auto store = viewer::TraceStore::Open(input, open);
  progress.Finish();
  return store;
}

// Warns of each problem not already in `shown`.
void PrintProblems(const CommandIo& io,
                   const std::vector<viewer::LoadProblem>& problems,
                   const std::vector<viewer::LoadProblem>& shown) {
  for (const viewer::LoadProblem& p : problems) {
    if (std::any_of(shown.begin(), shown.end(), [&](const auto& s) {
          return s.path == p.path && s.message == p.message;
        })) {
      continue;
    }
    std::fprintf(io.err, "podscope analyze: warning: %s: %s%s\n",
                 p.path.c_str(), p.message.c_str(),
                 p.loaded ? " (what could be read is analysed)" : "");
  }
}

// A store opened as an overview is analysed a host at a time.
absl::StatusOr<viewer::PodAnalysis> Analyze(
    const viewer::TraceStore& store, const viewer::PodAnalysisOptions& options,
    const CommandIo& io) {
  if (!store.is_overview()) return viewer::AnalyzePod(store, options);
  std::vector<viewer::LoadProblem> problems;
  ProgressLine hosts(io, "analysing", "hosts");
  auto a = viewer::AnalyzePodByHost(
      store, options, 0, &problems,
      [&](size_t done, size_t total) { hosts.Update(done, total); });
  hosts.Finish();
  if (a.ok()) PrintProblems(io, problems, store.problems());
  return a;
}

int RunAnalyze(std::span<const std::string> args, const CommandIo& io) {
  bool json = false;
  int64_t top = 20;
  std::string session;
  bool critical = false;
  int64_t step = -1;
  std::string what_if_spec;
  FlagParser flags;
  flags.AddString("what_if", &what_if_spec);
  flags.AddBool("critical_path", &critical);
  flags.AddInt("step", &step, 0, int64_t{1} << 62);
  flags.AddBool("json", &json);
  flags.AddInt("top", &top, 0, 1000000000);
  flags.AddString("session", &session);
  std::vector<std::string> paths;
  bool help = false;
  if (auto s = flags.Parse(args, &paths, &help); !s.ok()) {
    return UsageError(io, "analyze", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kAnalyzeCommand);
  if (paths.size() != 1) {
    return UsageError(io, "analyze",
                      paths.empty() ? "expects a PATH (a trace file or folder)"
                                    : "expects one PATH");
  }
  auto input = ResolveInput(paths[0], "analyze", io);
  if (!input.ok()) {
    std::fprintf(io.err, "podscope analyze: %s\n",
                 std::string(input.status().message()).c_str());
    return kExitUnreadable;
  }
  // A session of several files is read a host at a time (AnalyzePodByHost:
  // memory for one host's events, not the pod's), unless what is asked for
  // follows work across ranks (the critical path) or a doctor's dump
  // reads every rank's events.
  const bool whole = critical || !what_if_spec.empty();
  auto store = OpenForAnalysis(*input, session, !whole, io);
  if (store.ok() && (*store)->is_overview() &&
      viewer::ReadDoctorDump((*store)->session().path)) {
    store = OpenForAnalysis(*input, session, /*by_host=*/false, io);
  }
  if (!store.ok()) {
    std::fprintf(io.err, "podscope analyze: %s\n",
                 std::string(store.status().message()).c_str());
    return ExitCodeOf(store.status());
  }
  PrintProblems(io, (*store)->problems(), {});
  // A job doctor's dump folder: its verdict comes first.
  std::optional<viewer::DoctorView> doctor;
  if (auto dump = viewer::ReadDoctorDump((*store)->session().path)) {
    doctor = viewer::BuildDoctorView(*dump, **store);
    for (const std::string& p : doctor->problems) {
      std::fprintf(io.err, "podscope analyze: warning: %s\n", p.c_str());
    }
  }
  viewer::PodAnalysisOptions options;
  options.top = static_cast<size_t>(top);
  auto analyzed = Analyze(**store, options, io);
  if (!analyzed.ok()) {
    std::fprintf(io.err, "podscope analyze: %s\n",
                 std::string(analyzed.status().message()).c_str());
    return ExitCodeOf(analyzed.status());
  }
  const viewer::PodAnalysis& analysis = *analyzed;
  std::optional<viewer::WhatIf> what_if;
  if (!what_if_spec.empty()) {
    auto w = viewer::ParseWhatIf(what_if_spec);
    if (!w.ok())
      return UsageError(io, "analyze", std::string(w.status().message()));
    what_if = *w;
    critical = true;
  }
  std::optional<viewer::CriticalPath> path;
  std::optional<viewer::WhatIfResult> retimed;
  if (critical) {
    const int row = step >= 0 ? RowOfStep(analysis.steps, step)
                              : DefaultCriticalPathRow(analysis.steps);
    if (row < 0) {
      std::fprintf(io.err, "podscope analyze: %s\n",
                   step >= 0 ? ("no step " + std::to_string(step)).c_str()
                             : "no steps: no critical path");
      return step >= 0 ? kExitUsage : kExitUnreadable;
    }
    path = viewer::AnalyzeCriticalPath(**store, analysis.steps,
                                       analysis.stragglers, row);
    if (what_if) {
      retimed = viewer::SimulateWhatIf(**store, analysis.steps,
                                       analysis.stragglers, row, *what_if);
    }
  }
  std::string text =
      json ? AnalysisJson(paths[0], **store, analysis, path ? &*path : nullptr)
           : AnalysisText(**store, analysis, static_cast<size_t>(top));
  if (path && !json) text += CriticalPathText(analysis.steps, *path);
  if (retimed && !json) text += WhatIfText(*what_if, path->step, *retimed);
  if (retimed && json) text = WithWhatIfJson(text, *what_if, *retimed);
  if (doctor) {
    text = json ? WithDoctorJson(std::move(text), *doctor)
                : DoctorText(**store, *doctor) + text;
  }
  if (std::fputs(text.c_str(), io.out) < 0) {
    std::fprintf(io.err, "podscope analyze: cannot write the output\n");
    return kExitInternal;
  }
  return kExitOk;
}

}  // namespace

const Command kAnalyzeCommand = {
    "analyze",
    "Analyse a multi-process job: steps per rank, stragglers, recompiles, "
    "top work, roofline, memory",
    kHelp,
    RunAnalyze,
};

}  // namespace podscope::tools
