// `podscope summary`: prints what a capture holds (summary.h computes it)
// as text for people or as JSON for scripts.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "command.h"
#include "flags.h"
#include "import_path.h"
#include "podscope/base/json.h"
#include "summary.h"
#include "text_format.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope summary [--json] [--top N] [--no-align-clocks] PATH

Summarises a capture: PATH is a trace file or a folder, searched
recursively for *.podtrace files (XSpace .xplane.pb files and Chrome trace
JSON are imported first). Prints the hosts; each process (host,
pid, process index and count, session, command line) with its tracks and
their event counts; the total number of events; the time span from the
first to the last event, with each file's clock offsets applied so that
hosts line up (and whether they could be); dropped events; and the event
names that took the most time (count, total, self time excluding direct
children on the same track, mean, max). For a job of several ranks, each
rank's steps (median and longest), the time its collectives took and
waited for the last rank to arrive, and the straggler verdict that
`podscope analyze` and the viewer's Pod panel state: the rank the others
waited significantly longer for (a test over steps on the waiting each
rank caused), or none, with the evidence. Unreadable and recovered files
are listed as warnings; the rest is still summarised.

Flags:
  --json             Print the same facts as one JSON object (times in ns)
  --top N            How many event names to list (default 15, 0: all)
  --no-align-clocks  Keep every file on its own host's monotonic clock
  -h, --help         Show this help

Exit codes: 0 success, 2 usage error, 3 PATH not found or no file in it
readable, 4 PATH cannot be read (e.g. a folder that cannot be listed).
)";

// A monotonic or reference timestamp as seconds, to the nanosecond.
std::string FormatSeconds(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t u =
      negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  return absl::StrFormat("%s%d.%09d s", negative ? "-" : "", u / 1000000000,
                         u % 1000000000);
}

std::string ProcessLabel(const ProcessSummary& p) {
  std::string label =
      absl::StrCat(p.host.empty() ? "unknown host" : p.host, " pid ", p.pid);
  if (p.process_index >= 0) {
    absl::StrAppend(&label, ", process ", p.process_index);
    if (p.process_count > 0) absl::StrAppend(&label, " of ", p.process_count);
  }
  return label;
}

std::string EventBreakdown(const TrackSummary& t) {
  std::vector<std::string> parts;
  if (t.slices) parts.push_back(Plural(t.slices, "slice"));
  if (t.instants) parts.push_back(Plural(t.instants, "instant"));
  if (t.counters) parts.push_back(Plural(t.counters, "counter value"));
  if (t.samples) parts.push_back(Plural(t.samples, "stack sample"));
  return parts.size() > 1 ? absl::StrCat("(", absl::StrJoin(parts, ", "), ")")
                          : "";
}

std::string ClockSentence(const TraceSummary& s) {
  const ClockAlignment& c = s.clocks;
  if (!c.requested) return "clocks not aligned (--no-align-clocks)";
  if (c.aligned()) {
    std::string text =
        c.files == 1
            ? std::string("clocks aligned: the file has")
            : absl::StrCat("clocks aligned: all ", c.files, " files have");
    absl::StrAppend(&text, " offsets to the reference clock");
    if (!c.references.empty())
      absl::StrAppend(&text, " '", c.references[0], "'");
    return text;
  }
  if (c.references.size() > 1) {
    return absl::StrCat(
        "clocks NOT aligned: files were measured against different reference "
        "clocks (",
        absl::StrJoin(c.references, ", "), "); hosts may not line up");
  }
  if (c.files == 1) {
    return "clocks not aligned: the file has no clock offsets (times are its "
           "host's monotonic clock)";
  }
  const size_t without = c.files - c.files_with_offsets;
  return absl::StrCat("clocks NOT aligned: ", without, " of ", c.files,
                      without == 1 ? " files has" : " files have",
                      " no clock offsets; hosts may not line up");
}

std::string RecoveredWarning(const ProcessSummary& p) {
  return absl::StrCat(p.path, ": recovered: ", p.recovery.Describe(),
                      "; summarised from the ", FormatCount(p.events),
                      " events that could be read");
}

// Code points, so that "µs" lines up with "ms".
size_t DisplayWidth(std::string_view s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

// `align` holds 'l' or 'r' per column; trailing blanks are trimmed.
void PrintTable(const std::vector<std::vector<std::string>>& rows,
                std::string_view align, std::string_view indent,
                std::string* out) {
  if (rows.empty()) return;
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], DisplayWidth(row[i]));
    }
  }
  for (const auto& row : rows) {
    std::string line(indent);
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - DisplayWidth(row[i]), ' ');
      if (i > 0) line += "  ";
      if (i < align.size() && align[i] == 'r') {
        absl::StrAppend(&line, pad, row[i]);
      } else {
        absl::StrAppend(&line, row[i], pad);
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(out, line, "\n");
  }
}

std::string Shorten(const std::string& s, size_t max) {
  return s.size() <= max ? s : s.substr(0, max - 3) + "...";
}

void AppendProcesses(const TraceSummary& s, std::string* b) {
  *b += "\nProcesses:\n";
  for (const ProcessSummary& p : s.processes) {
    absl::StrAppend(b, "  ", ProcessLabel(p));
    if (!p.session_id.empty()) absl::StrAppend(b, ", session ", p.session_id);
    absl::StrAppend(b, "\n    file: ", p.path, "\n");
    if (!p.command_line.empty()) {
      absl::StrAppend(b, "    command: ", absl::StrJoin(p.command_line, " "),
                      "\n");
    }
    absl::StrAppend(b, "    ", Plural(p.events, "event"));
    if (p.has_events) {
      absl::StrAppend(b, " over ", FormatDuration(p.last_ns - p.first_ns));
    }
    if (p.dropped) absl::StrAppend(b, ", ", FormatCount(p.dropped), " dropped");
    *b += "\n";
    if (!p.clock_alignment.empty()) {
      absl::StrAppend(b, "    clock: aligned by ", p.clock_alignment);
      if (p.clock_alignment_uncertainty_ns < 0) {
        absl::StrAppend(b, ", uncertainty not known (as good as NTP)");
      } else {
        absl::StrAppend(b, " +-",
                        FormatDuration(p.clock_alignment_uncertainty_ns));
      }
      if (p.clock_alignment == "collectives") {
        absl::StrAppend(
            b, " (between hosts +-",
            FormatDuration(p.clock_alignment_relative_uncertainty_ns), ")");
      }
      if (!p.clock_alignment_note.empty()) {
        absl::StrAppend(b, "; ", p.clock_alignment_note);
      }
      *b += "\n";
    } else if (p.has_clock_offsets) {
      absl::StrAppend(
          b, "    clock: ", p.clock_offset_ns < 0 ? "-" : "+",
          FormatDuration(std::abs(p.clock_offset_ns)), " to the reference, +-",
          FormatDuration(p.clock_uncertainty_ns),
          absl::StrFormat(", drift %+.1f ppm\n", p.clock_drift_ppm));
    }
    std::vector<std::vector<std::string>> rows;
    for (const TrackSummary& t : p.tracks) {
      rows.push_back({std::string(TrackKindName(t.kind)), Shorten(t.name, 40),
                      Plural(t.events(), "event"), EventBreakdown(t),
                      t.dropped ? FormatCount(t.dropped) + " dropped" : ""});
    }
    PrintTable(rows, "llrll", "      ", b);
  }
}

void AppendTimeSpanAndDrops(const TraceSummary& s, std::string* b) {
  *b += "\nTime span: ";
  if (s.has_events) {
    absl::StrAppend(b, FormatDuration(s.duration_ns()), ", from ",
                    FormatSeconds(s.first_ns), " to ", FormatSeconds(s.last_ns),
                    "\n  ", ClockSentence(s), "\n");
    if (s.first_realtime_ns) {
      absl::StrAppend(b, "  first event at ", FormatUtc(*s.first_realtime_ns),
                      "\n");
    }
  } else {
    *b += "no events\n";
  }
  absl::StrAppend(b, "\nDropped events: ", FormatCount(s.total_dropped), "\n");
  for (const ProcessSummary& p : s.processes) {
    for (const TrackSummary& t : p.tracks) {
      if (t.dropped == 0) continue;
      absl::StrAppend(b, "  ", ProcessLabel(p), ", ",
                      std::string(TrackKindName(t.kind)), " '", t.name,
                      "': ", FormatCount(t.dropped), "\n");
    }
  }
}

void AppendTopNames(const TraceSummary& s, std::string* b) {
  if (s.top_names.empty()) return;
  absl::StrAppend(b, "\nTop ", s.top_names.size(), " of ",
                  Plural(s.distinct_names, "event name"), " by total time:\n");
  std::vector<std::vector<std::string>> rows = {
      {"name", "count", "total", "self", "mean", "max"}};
  for (const SliceNameStats& n : s.top_names) {
    rows.push_back({Shorten(n.name, 48), FormatCount(n.count),
                    FormatDuration(n.total_ns), FormatDuration(n.self_ns),
                    FormatDuration(n.mean_ns()), FormatDuration(n.max_ns)});
  }
  PrintTable(rows, "lrrrrr", "  ", b);
}

// The ranks of a multi-process job side by side: their steps, the time
// their collectives waited for the last rank, and the straggler verdict.
void AppendRanks(const TraceSummary& s, std::string* b) {
  std::vector<const ProcessSummary*> ranks;
  for (const ProcessSummary& p : s.processes) {
    if (p.process_count > 1 &&
        (p.activity.steps > 0 || p.activity.collectives > 0)) {
      ranks.push_back(&p);
    }
  }
  if (ranks.empty()) return;
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const ProcessSummary* a, const ProcessSummary* c) {
                     return a->process_index < c->process_index;
                   });
  *b += "\nRanks (steps, and the time collectives waited for the last rank):\n";
  std::vector<std::vector<std::string>> rows = {
      {"rank", "host", "steps", "median step", "max step", "collectives",
       "in collectives", "waiting"}};
  for (const ProcessSummary* p : ranks) {
    const RankActivity& a = p->activity;
    rows.push_back({absl::StrCat(p->process_index), Shorten(p->host, 24),
                    FormatCount(a.steps),
                    a.steps ? FormatDuration(a.step_median_ns) : "-",
                    a.steps ? FormatDuration(a.step_max_ns) : "-",
                    FormatCount(a.collectives), FormatDuration(a.collective_ns),
                    FormatDuration(a.collective_wait_ns)});
  }
  PrintTable(rows, "llrrrrrr", "  ", b);
  if (!s.verdict.empty()) absl::StrAppend(b, "  verdict: ", s.verdict, "\n");
}

void AppendWarnings(const TraceSummary& s, std::string* b) {
  std::vector<std::string> warnings;
  for (const UnreadableFile& u : s.unreadable) {
    warnings.push_back(absl::StrCat(u.path, ": unreadable, not summarised: ",
                                    WithoutPathPrefix(u.message, u.path)));
  }
  for (const ProcessSummary& p : s.processes) {
    if (p.recovered()) warnings.push_back(RecoveredWarning(p));
  }
  if (warnings.empty()) return;
  *b += "\nWarnings:\n";
  for (const std::string& w : warnings) absl::StrAppend(b, "  ", w, "\n");
}

// The SPMD partitioner's inserted collectives, per process: what caused
// each, how often it ran, its time and bytes against the least required.
void AppendSpmdCollectives(const TraceSummary& s, std::string* b) {
  for (const ProcessSummary& p : s.processes) {
    if (p.spmd_collectives.empty()) continue;
    absl::StrAppend(b,
                    "\nSPMD collectives (inserted by the partitioner), "
                    "process ",
                    p.process_index, ":\n");
    std::vector<std::vector<std::string>> rows = {
        {"kind", "count", "total", "bytes/call", "least", "caused by"}};
    for (const SpmdCollectiveSummary& c : p.spmd_collectives) {
      rows.push_back({c.kind, FormatCount(c.count), FormatDuration(c.total_ns),
                      FormatCount(c.bytes), FormatCount(c.min_bytes),
                      c.reason});
    }
    PrintTable(rows, "lrrrrl", "  ", b);
  }
}

void PrintHuman(const std::string& path, const TraceSummary& s,
                const CommandIo& io) {
  std::string b =
      absl::StrCat("Summary of ", path, ": ",
                   Plural(s.processes.size(), "process", "processes"), " on ",
                   Plural(s.hosts.size(), "host"), ", ",
                   Plural(s.total_events, "event"), "\n");
  b += "\nHosts:\n";
  for (const HostSummary& h : s.hosts) {
    absl::StrAppend(&b, "  ", h.name.empty() ? "(unknown)" : h.name, ": ",
                    Plural(h.processes, "process", "processes"), "\n");
  }
  AppendProcesses(s, &b);
  AppendTimeSpanAndDrops(s, &b);
  AppendTopNames(s, &b);
  AppendRanks(s, &b);
  AppendSpmdCollectives(s, &b);
  AppendWarnings(s, &b);
  std::fputs(b.c_str(), io.out);
}

void WriteJsonTracks(const ProcessSummary& p, base::JsonWriter& j) {
  j.Key("tracks").BeginArray();
  for (const TrackSummary& t : p.tracks) {
    j.BeginObject();
    j.Field("id", t.id);
    j.Field("kind", TrackKindName(t.kind));
    j.Field("name", t.name);
    j.Field("events", t.events());
    j.Field("slices", t.slices);
    j.Field("instants", t.instants);
    j.Field("counters", t.counters);
    j.Field("samples", t.samples);
    j.Field("dropped", t.dropped);
    j.EndObject();
  }
  j.EndArray();
}

void WriteJsonProcess(const ProcessSummary& p, base::JsonWriter& j) {
  j.BeginObject();
  j.Field("path", p.path);
  j.Field("status", p.recovered() ? "recovered" : "intact");
  j.Field("host", p.host);
  j.Field("pid", p.pid);
  j.Field("process_index", p.process_index);
  j.Field("process_count", p.process_count);
  j.Field("session_id", p.session_id);
  j.Key("command_line").BeginArray();
  for (const std::string& arg : p.command_line) j.String(arg);
  j.EndArray();
  j.Field("events", p.events);
  j.Field("dropped", p.dropped);
  j.Field("clock_offsets", p.has_clock_offsets);
  if (p.has_clock_offsets) {
    j.Field("clock_offset_ns", p.clock_offset_ns);
    j.Field("clock_uncertainty_ns", p.clock_uncertainty_ns);
    j.Key("clock_drift_ppm").Double(p.clock_drift_ppm);
  }
  if (!p.clock_alignment.empty()) {
    j.Field("clock_alignment", p.clock_alignment);
    j.Field("clock_alignment_uncertainty_ns", p.clock_alignment_uncertainty_ns);
    j.Field("clock_alignment_relative_uncertainty_ns",
            p.clock_alignment_relative_uncertainty_ns);
  }
  j.Key("first_ns");
  p.has_events ? j.Int(p.first_ns) : j.Null();
  j.Key("last_ns");
  p.has_events ? j.Int(p.last_ns) : j.Null();
  j.Field("has_index", p.recovery.has_index);
  j.Field("skipped_bytes", p.recovery.skipped_bytes());
  WriteJsonTracks(p, j);
  j.EndObject();
}

void WriteJsonHostsAndProcesses(const TraceSummary& s, base::JsonWriter& j) {
  j.Key("hosts").BeginArray();
  for (const HostSummary& h : s.hosts) {
    j.BeginObject().Field("name", h.name).Field("processes", h.processes);
    j.EndObject();
  }
  j.EndArray();
  j.Key("processes").BeginArray();
  for (const ProcessSummary& p : s.processes) WriteJsonProcess(p, j);
  j.EndArray();
  j.Field("total_events", s.total_events);
}

void WriteJsonTimeSpan(const TraceSummary& s, base::JsonWriter& j) {
  j.Key("time_span").BeginObject();
  j.Key("first_ns");
  s.has_events ? j.Int(s.first_ns) : j.Null();
  j.Key("last_ns");
  s.has_events ? j.Int(s.last_ns) : j.Null();
  j.Field("duration_ns", s.duration_ns());
  j.Key("first_realtime_ns");
  s.first_realtime_ns ? j.Int(*s.first_realtime_ns) : j.Null();
  j.Field("clocks_aligned", s.clocks.aligned());
  j.Field("align_requested", s.clocks.requested);
  j.Field("files_with_clock_offsets", s.clocks.files_with_offsets);
  j.Key("reference_clocks").BeginArray();
  for (const std::string& r : s.clocks.references) j.String(r);
  j.EndArray();
  j.EndObject();
}

void WriteJsonDropped(const TraceSummary& s, base::JsonWriter& j) {
  j.Key("dropped").BeginObject();
  j.Field("total", s.total_dropped);
  j.Key("tracks").BeginArray();
  for (const ProcessSummary& p : s.processes) {
    for (const TrackSummary& t : p.tracks) {
      if (t.dropped == 0) continue;
      j.BeginObject();
      j.Field("path", p.path);
      j.Field("host", p.host);
      j.Field("pid", p.pid);
      j.Field("track_id", t.id);
      j.Field("track", t.name);
      j.Field("dropped", t.dropped);
      j.EndObject();
    }
  }
  j.EndArray();
  j.EndObject();
}

void WriteJsonRanks(const TraceSummary& s, base::JsonWriter& j) {
  j.Key("ranks").BeginArray();
  for (const ProcessSummary& p : s.processes) {
    if (p.process_count < 2) continue;
    const RankActivity& a = p.activity;
    j.BeginObject();
    j.Field("rank", p.process_index).Field("host", p.host).Field("pid", p.pid);
    j.Field("steps", a.steps).Field("step_median_ns", a.step_median_ns);
    j.Field("step_max_ns", a.step_max_ns);
    j.Field("step_total_ns", a.step_total_ns);
    j.Field("collectives", a.collectives);
    j.Field("collective_ns", a.collective_ns);
    j.Field("collective_wait_ns", a.collective_wait_ns);
    j.EndObject();
  }
  j.EndArray();
  if (!s.verdict.empty()) {
    j.Field("verdict", s.verdict);
    j.Key("straggler_rank");
    if (s.straggler_rank >= 0) {
      j.Int(s.straggler_rank);
    } else {
      j.Null();
    }
  }
}

void WriteJsonTopNames(const TraceSummary& s, base::JsonWriter& j) {
  j.Field("distinct_names", s.distinct_names);
  j.Key("top_names").BeginArray();
  for (const SliceNameStats& n : s.top_names) {
    j.BeginObject();
    j.Field("name", n.name);
    j.Field("count", n.count);
    j.Field("total_ns", n.total_ns);
    j.Field("self_ns", n.self_ns);
    j.Field("mean_ns", n.mean_ns());
    j.Field("max_ns", n.max_ns);
    j.EndObject();
  }
  j.EndArray();
}

void WriteJsonWarnings(const TraceSummary& s, base::JsonWriter& j) {
  j.Key("warnings").BeginArray();
  for (const UnreadableFile& u : s.unreadable) {
    j.BeginObject().Field("path", u.path).Field("status", "unreadable");
    j.Field("message", u.message).EndObject();
  }
  for (const ProcessSummary& p : s.processes) {
    if (!p.recovered()) continue;
    j.BeginObject().Field("path", p.path).Field("status", "recovered");
    j.Field("message", RecoveredWarning(p)).EndObject();
  }
  j.EndArray();
}

void PrintJson(const std::string& path, const TraceSummary& s,
               const CommandIo& io) {
  std::string out;
  base::JsonWriter j(&out);
  j.BeginObject();
  j.Field("path", path);
  WriteJsonHostsAndProcesses(s, j);
  WriteJsonTimeSpan(s, j);
  WriteJsonDropped(s, j);
  WriteJsonRanks(s, j);
  WriteJsonTopNames(s, j);
  WriteJsonWarnings(s, j);
  j.EndObject();
  std::fputs(out.c_str(), io.out);
}

int RunSummary(std::span<const std::string> args, const CommandIo& io) {
  bool json = false;
  bool no_align = false;
  int64_t top = 15;
  FlagParser flags;
  flags.AddBool("json", &json);
  flags.AddBool("no-align-clocks", &no_align);
  flags.AddInt("top", &top, 0, 1000000000);
  std::vector<std::string> paths;
  bool help = false;
  if (auto s = flags.Parse(args, &paths, &help); !s.ok()) {
    return UsageError(io, "summary", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kSummaryCommand);
  if (paths.size() != 1) {
    return UsageError(io, "summary",
                      paths.empty() ? "expects a PATH (a trace file or folder)"
                                    : "expects one PATH");
  }
  auto input = ResolveInput(paths[0], "summary", io);
  if (!input.ok()) {
    std::fprintf(io.err, "podscope summary: %s\n",
                 std::string(input.status().message()).c_str());
    return kExitUnreadable;
  }
  ProgressLine progress(io, "summarising", "files");
  SummaryOptions options;
  options.align_clocks = !no_align;
  options.top_names = static_cast<size_t>(top);
  options.progress = [&](size_t done, size_t total) {
    progress.Update(done, total);
  };
  auto summary = SummarizePath(*input, options);
  progress.Finish();
  if (!summary.ok()) {
    std::fprintf(io.err, "podscope summary: %s\n",
                 std::string(summary.status().message()).c_str());
    return summary.status().code() == absl::StatusCode::kNotFound
               ? kExitUnreadable
               : kExitInternal;
  }
  if (json) {
    PrintJson(paths[0], *summary, io);
  } else {
    PrintHuman(paths[0], *summary, io);
  }
  if (summary->processes.empty()) {
    std::fprintf(io.err, "podscope summary: no readable trace at %s\n",
                 paths[0].c_str());
    return kExitUnreadable;
  }
  return kExitOk;
}

}  // namespace

const Command kSummaryCommand = {
    "summary",
    "Summarise a capture: hosts, processes, tracks, time span, top events",
    kHelp,
    RunSummary,
};

}  // namespace podscope::tools
