// `podscope query PATH 'SQL'`: SQL over a session (viewer/core
// session_query.h), as a table, CSV or JSON.
#include <algorithm>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_format.h"
#include "command.h"
#include "flags.h"
#include "import_path.h"
#include "podscope/base/json.h"
#include "podscope/viewer/session_query.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope query [--csv | --json] [--max_rows N] PATH 'SQL'

Runs one SQL statement (SQLite's dialect) over a session: PATH is a trace
file, a session folder, a capture folder (its newest session, or
--session), or other profilers' traces (imported first). The tables are
read from the session as it is loaded, not copied:
  slices(id, host, pid, rank, track, thread, name, category, ts, dur,
         depth, parent_id, args)      category: host, device, collective,
                                      data_loading; args: JSON
  counters(track, host, pid, rank, name, ts, value)
  flows(track, slice_id, flow_id, phase)
  steps(rank, step, ts, dur, compute_ns, collective_transfer_ns,
        collective_wait_ns, data_loading_ns, host_ns, idle_ns, slice_id)
  collectives(key, name, rank, ts, dur, wait_ns, last, late_by_ns, step,
              slice_id)               each rank's arrival, joined by key
  compiles(rank, ts, dur, graph_hash, cache_hit, signature, step, late,
           slice_id)
  processes(process_id, host, pid, rank, path)
  threads(track, process_id, host, pid, rank, kind, name, tid, device_id,
          stream_id)
Times are ns on the session's aligned clock. On slices and counters,
rank = N, host = 'H', name = 'N' (slices) and ranges on ts are answered
from the session's indexes. docs/analysis.md has example queries.

Flags:
  --csv           Print CSV (RFC 4180) with a header line
  --json          Print a JSON array of objects, one per row
  --max_rows N    Stop after N rows (default 0: all)
  --session NAME  For a capture folder: the session to query
  -h, --help      Show this help

Exit codes: 0 success, 2 usage error or a statement SQLite rejects, 3
PATH not found or nothing readable in it, 4 internal or I/O error.
)";

std::string Text(const viewer::QueryValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    return absl::StrFormat("%.17g", *d);
  }
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return "";
}

std::string Csv(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

int RunQuery(std::span<const std::string> args, const CommandIo& io) {
  bool csv = false, json = false;
  int64_t max_rows = 0;
  std::string session;
  FlagParser flags;
  flags.AddBool("csv", &csv);
  flags.AddBool("json", &json);
  flags.AddInt("max_rows", &max_rows, 0, int64_t{1} << 62);
  flags.AddString("session", &session);
  std::vector<std::string> positional;
  bool help = false;
  if (auto s = flags.Parse(args, &positional, &help); !s.ok()) {
    return UsageError(io, "query", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kQueryCommand);
  if (positional.size() != 2) {
    return UsageError(io, "query", "expects PATH and one SQL statement");
  }
  if (csv && json) return UsageError(io, "query", "--csv or --json, not both");
  auto input = ResolveInput(positional[0], "query", io);
  if (!input.ok()) {
    std::fprintf(io.err, "podscope query: %s\n",
                 std::string(input.status().message()).c_str());
    return kExitUnreadable;
  }
  viewer::OpenOptions open;
  open.session = session;
  auto store = viewer::TraceStore::Open(*input, open);
  if (!store.ok()) {
    std::fprintf(io.err, "podscope query: %s\n",
                 std::string(store.status().message()).c_str());
    return kExitUnreadable;
  }
  for (const viewer::LoadProblem& p : (*store)->problems()) {
    std::fprintf(io.err, "podscope query: warning: %s: %s\n", p.path.c_str(),
                 p.message.c_str());
  }
  auto q = viewer::SessionQuery::Create(**store);
  if (!q.ok()) {
    std::fprintf(io.err, "podscope query: %s\n",
                 std::string(q.status().message()).c_str());
    return kExitInternal;
  }
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> table;  // text output only
  std::string out;
  base::JsonWriter j(&out, base::JsonLayout::kOneLine);
  if (json) j.BeginArray();
  uint64_t rows = 0;
  bool header = false;
  const absl::Status s = (*q)->Run(
      positional[1], &columns, [&](const std::vector<viewer::QueryValue>& v) {
        if (csv && !header) {
          for (size_t i = 0; i < columns.size(); ++i) {
            out += (i ? "," : "") + Csv(columns[i]);
          }
          out += "\n";
          header = true;
        }
        if (json) {
          j.BeginObject(base::JsonLayout::kCompact);
          for (size_t i = 0; i < v.size(); ++i) {
            j.Key(columns[i]);
            if (const auto* n = std::get_if<int64_t>(&v[i])) {
              j.Int(*n);
            } else if (const auto* d = std::get_if<double>(&v[i])) {
              j.Double(*d);
            } else if (const auto* t = std::get_if<std::string>(&v[i])) {
              j.String(*t);
            } else {
              j.Null();
            }
          }
          j.EndObject();
        } else if (csv) {
          for (size_t i = 0; i < v.size(); ++i) {
            out += (i ? "," : "") + Csv(Text(v[i]));
          }
          out += "\n";
        } else {
          std::vector<std::string> cells;
          for (const auto& x : v) cells.push_back(Text(x));
          table.push_back(std::move(cells));
        }
        // Large CSV/JSON results go out as they come.
        if (out.size() > (1 << 20)) {
          std::fputs(out.c_str(), io.out);
          out.clear();
        }
        ++rows;
        return max_rows == 0 || rows < static_cast<uint64_t>(max_rows);
      });
  if (!s.ok()) {
    std::fprintf(io.err, "podscope query: %s\n",
                 std::string(s.message()).c_str());
    return kExitUsage;
  }
  if (json) {
    j.EndArray();
    out += "\n";
  } else if (csv && !header) {
    for (size_t i = 0; i < columns.size(); ++i) {
      out += (i ? "," : "") + Csv(columns[i]);
    }
    out += "\n";
  } else if (!csv) {
    std::vector<size_t> width(columns.size());
    for (size_t i = 0; i < columns.size(); ++i) width[i] = columns[i].size();
    for (const auto& r : table) {
      for (size_t i = 0; i < r.size(); ++i) {
        width[i] = std::max(width[i], r[i].size());
      }
    }
    auto line = [&](const std::vector<std::string>& cells) {
      for (size_t i = 0; i < cells.size(); ++i) {
        out += absl::StrFormat("%s%-*s", i ? "  " : "",
                               static_cast<int>(width[i]), cells[i]);
      }
      out += "\n";
    };
    line(columns);
    for (const auto& r : table) line(r);
    out += absl::StrFormat("(%d row%s)\n", rows, rows == 1 ? "" : "s");
  }
  if (std::fputs(out.c_str(), io.out) < 0) {
    std::fprintf(io.err, "podscope query: cannot write the output\n");
    return kExitInternal;
  }
  return kExitOk;
}

}  // namespace

const Command kQueryCommand = {
    "query",
    "SQL over a session: slices, counters, steps, collectives, compiles, "
    "processes, threads, flows",
    kHelp,
    RunQuery,
};

}  // namespace podscope::tools
