// `podscope check`: verifies trace files record by record and chunk by
// chunk, and says for each whether it is intact, was recovered (and what
// was lost), or cannot be read at all.
#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "command.h"
#include "flags.h"
#include "import_path.h"
#include "json_writer.h"
#include "podscope/trace_format/reader.h"
#include "text_format.h"

namespace podscope::tools {
namespace {

using trace_format::TraceReader;

constexpr std::string_view kHelp =
    R"(Usage: podscope check [--json] FILE...

Verifies trace files: every record's checksum is checked and every chunk is
decoded. Each file is reported as
  intact       closed properly, with its index, nothing damaged;
  recovered    the writer died before closing it, or parts are damaged: the
               events that could be read are counted and every skipped byte
               range is listed with its offset, size and reason;
  unreadable   not a Podscope trace, written by a newer major version, or
               cannot be opened.
A FILE may be a folder: its *.podtrace files are checked (recursively).
XSpace (.xplane.pb) and Chrome trace JSON files are imported first (see
docs/interop.md), and the files of the import are checked.

Flags:
  --json       Print one JSON array with an object per file (path, status,
               events, chunks, tracks, has_index, skipped_bytes, skipped,
               error)
  -h, --help   Show this help

Exit codes: 0 every file intact, 1 some file recovered (none unreadable),
2 usage error, 3 some file unreadable or not found.
)";

// Ranges listed per file in the human output; --json lists them all.
constexpr size_t kMaxRangesShown = 20;

enum class Status { kIntact, kRecovered, kUnreadable };

std::string_view StatusName(Status s) {
  switch (s) {
    case Status::kIntact:
      return "intact";
    case Status::kRecovered:
      return "recovered";
    case Status::kUnreadable:
      return "unreadable";
  }
  return "";
}

struct FileCheck {
  std::string path;
  Status status = Status::kUnreadable;
  std::string error;
  uint64_t events = 0;
  uint64_t chunks = 0;
  uint64_t chunks_decoded = 0;
  uint64_t tracks = 0;
  trace_format::RecoveryReport report;
};

FileCheck CheckReader(const TraceReader& reader) {
  FileCheck c;
  c.path = reader.name();
  c.chunks = reader.chunks().size();
  c.tracks = reader.tracks().size();
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> decoded{0};
  reader.ForEachChunk(0,
                      [&](size_t, std::vector<trace_format::TrackEvents>& e) {
                        uint64_t n = 0;
                        for (const auto& track : e) n += track.event_count();
                        events += n;
                        ++decoded;
                      });
  c.events = events;
  c.chunks_decoded = decoded;
  // Decoding is what finds damaged chunks, so the report comes after it.
  c.report = reader.report();
  c.status = c.report.intact() ? Status::kIntact : Status::kRecovered;
  return c;
}

std::vector<FileCheck> CheckPaths(const std::vector<std::string>& paths,
                                  const CommandIo& io) {
  std::vector<FileCheck> out;
  trace_format::ReaderOptions options;
  options.verify_all = true;
  for (const std::string& path : paths) {
    // Foreign traces are checked by importing them: what cannot be
    // imported is unreadable.
    auto resolved = ResolveInput(path, "check", io);
    auto opened = resolved.ok() ? trace_format::OpenTraces(*resolved, options)
                                : resolved.status();
    if (!opened.ok()) {
      FileCheck& c = out.emplace_back();
      c.path = path;
      c.error = std::string(opened.status().message());
      continue;
    }
    // Files come back sorted by path in two lists; keep that order overall.
    std::vector<FileCheck> found;
    for (const auto& reader : opened->readers) {
      found.push_back(CheckReader(*reader));
    }
    for (const auto& [file, status] : opened->failures) {
      FileCheck& c = found.emplace_back();
      c.path = file;
      c.error = std::string(status.message());
    }
    std::stable_sort(
        found.begin(), found.end(),
        [](const FileCheck& a, const FileCheck& b) { return a.path < b.path; });
    for (FileCheck& c : found) out.push_back(std::move(c));
  }
  return out;
}

std::string WhyRecovered(const FileCheck& c) {
  std::vector<std::string> why;
  if (!c.report.has_index) {
    why.push_back("not closed: no index");
  }
  if (!c.report.skipped.empty()) why.push_back("damaged");
  std::string out;
  for (const std::string& w : why) {
    out += out.empty() ? "" : "; ";
    out += w;
  }
  return out;
}

void PrintHuman(const std::vector<FileCheck>& checks, const CommandIo& io) {
  size_t counts[3] = {0, 0, 0};
  for (const FileCheck& c : checks) {
    // A blank line between files' blocks.
    std::string b = counts[0] + counts[1] + counts[2] == 0 ? "" : "\n";
    ++counts[static_cast<int>(c.status)];
    absl::StrAppend(&b, c.path, ": ", std::string(StatusName(c.status)));
    if (c.status == Status::kUnreadable) {
      absl::StrAppend(&b, "\n  ", WithoutPathPrefix(c.error, c.path), "\n");
      std::fputs(b.c_str(), io.out);
      continue;
    }
    const std::string size = FormatBytes(c.report.file_bytes);
    if (c.status == Status::kIntact) {
      absl::StrAppend(&b, "\n  ", FormatCount(c.events), " events in ",
                      Plural(c.chunks, "chunk"), ", ",
                      Plural(c.tracks, "track"), ", ", size,
                      "; closed with an index\n");
    } else {
      absl::StrAppend(&b, " (", WhyRecovered(c), ")\n  ", FormatCount(c.events),
                      " events recovered from ", FormatCount(c.chunks_decoded),
                      " of ", Plural(c.chunks, "chunk"), ", ",
                      Plural(c.tracks, "track"), ", ", size, "\n");
      const uint64_t skipped = c.report.skipped_bytes();
      if (c.report.skipped.empty()) {
        absl::StrAppend(&b, "  no bytes skipped\n");
      } else {
        absl::StrAppend(&b, "  ", FormatCount(skipped), " bytes skipped");
        if (skipped >= 1024)
          absl::StrAppend(&b, " (", FormatBytes(skipped), ")");
        absl::StrAppend(&b, " in ", Plural(c.report.skipped.size(), "range"),
                        ":\n");
      }
      size_t shown = 0;
      for (const auto& r : c.report.skipped) {
        if (shown++ == kMaxRangesShown) {
          absl::StrAppend(&b, "    ... and ",
                          c.report.skipped.size() - kMaxRangesShown,
                          " more (--json lists them all)\n");
          break;
        }
        absl::StrAppend(&b, "    offset ", FormatCount(r.offset), ", ",
                        FormatCount(r.bytes), " bytes: ", r.reason, "\n");
      }
    }
    std::fputs(b.c_str(), io.out);
  }
  if (checks.size() > 1) {
    std::fprintf(
        io.out, "\n%s checked: %zu intact, %zu recovered, %zu unreadable\n",
        Plural(checks.size(), "file").c_str(), counts[0], counts[1], counts[2]);
  }
}

void PrintJson(const std::vector<FileCheck>& checks, const CommandIo& io) {
  std::string out;
  JsonWriter j(&out);
  j.BeginArray();
  for (const FileCheck& c : checks) {
    j.BeginObject();
    j.Field("path", c.path);
    j.Field("status", StatusName(c.status));
    j.Field("events", c.events);
    j.Field("chunks", c.chunks);
    j.Field("chunks_decoded", c.chunks_decoded);
    j.Field("tracks", c.tracks);
    j.Field("has_index", c.report.has_index);
    j.Field("file_bytes", c.report.file_bytes);
    j.Field("skipped_bytes", c.report.skipped_bytes());
    j.Key("skipped").BeginArray();
    for (const auto& r : c.report.skipped) {
      j.BeginObject();
      j.Field("offset", r.offset);
      j.Field("bytes", r.bytes);
      j.Field("reason", r.reason);
      j.EndObject();
    }
    j.EndArray();
    j.Key("error");
    if (c.status == Status::kUnreadable) {
      j.String(c.error);
    } else {
      j.Null();
    }
    j.EndObject();
  }
  j.EndArray();
  std::fputs(out.c_str(), io.out);
}

int RunCheck(std::span<const std::string> args, const CommandIo& io) {
  bool json = false;
  FlagParser flags;
  flags.AddBool("json", &json);
  std::vector<std::string> paths;
  bool help = false;
  if (auto s = flags.Parse(args, &paths, &help); !s.ok()) {
    return UsageError(io, "check", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kCheckCommand);
  if (paths.empty()) {
    return UsageError(io, "check", "expects at least one FILE");
  }
  const std::vector<FileCheck> checks = CheckPaths(paths, io);
  if (json) {
    PrintJson(checks, io);
  } else {
    PrintHuman(checks, io);
  }
  int code = kExitOk;
  for (const FileCheck& c : checks) {
    if (c.status == Status::kUnreadable) return kExitUnreadable;
    if (c.status == Status::kRecovered) code = kExitRecovered;
  }
  return code;
}

}  // namespace

const Command kCheckCommand = {
    "check",
    "Verify trace files: intact, recovered (what was lost) or unreadable",
    kHelp,
    RunCheck,
};

}  // namespace podscope::tools
