// `podscope export`: converts a capture to a format other tools open.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "command.h"
#include "flags.h"
#include "import_path.h"
#include "podscope/trace_format/chrome_export.h"
#include "podscope/trace_format/perfetto_export.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/xspace.h"
#include "text_format.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope export --format chrome PATH -o OUT [--gzip] [--no-align-clocks]
       podscope export --format perfetto PATH -o OUT.pftrace [--no-align-clocks]
       podscope export --format xspace PATH -o LOGDIR [--session NAME]

Converts traces to Chrome trace JSON (the Trace Event Format), which
Perfetto UI (ui.perfetto.dev) and chrome://tracing open. PATH is a trace
file or a folder, searched recursively for *.podtrace files; all of them go
into one document, one process per file and one thread per track. Each
file's clock offsets are applied so that hosts line up. XSpace (.xplane.pb)
and Chrome trace JSON inputs are imported first.

--format perfetto writes Perfetto's protobuf trace format (OUT.pftrace),
which Perfetto UI and trace_processor open natively; it is written as it
goes, so traces too large for JSON convert too.

--format xspace writes what XProf and TensorBoard's profile plugin open:
LOGDIR/plugins/profile/SESSION/HOST.xplane.pb, one file per host, on each
host's realtime clock (docs/interop.md).

Flags:
  --format FORMAT    The output format; one of: chrome, perfetto, xspace
  -o, --output OUT   The file to write (replaced if it exists); for xspace,
                     the log folder
  --session NAME     xspace: the run folder's name (default: the session)
  --gzip             Compress the output with gzip (implied when OUT ends
                     in .gz; chrome only)
  --no-align-clocks  Keep every file on its own host's monotonic clock
  -h, --help         Show this help

Exit codes: 0 success, 2 usage error, 3 PATH not found or no file in it
readable, 4 OUT cannot be written. Unreadable or recovered files beside
readable ones are reported as warnings.
)";

constexpr std::string_view kFormats[] = {"chrome", "perfetto", "xspace"};

struct ExportFlags {
  std::string format;
  std::string out_path;
  std::string session;
  std::string path;  // the one PATH
  bool gzip = false;
  bool no_align = false;
};

// Reads and checks the flags into *f. Returns the exit code when the
// command ends here (help, or a usage error).
std::optional<int> ParseExportFlags(std::span<const std::string> args,
                                    const CommandIo& io, ExportFlags* f) {
  FlagParser flags;
  flags.AddString("session", &f->session);
  flags.AddString("format", &f->format);
  flags.AddString("output", &f->out_path, 'o');
  flags.AddBool("gzip", &f->gzip);
  flags.AddBool("no-align-clocks", &f->no_align);
  std::vector<std::string> paths;
  bool help = false;
  if (auto s = flags.Parse(args, &paths, &help); !s.ok()) {
    return UsageError(io, "export", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kExportCommand);
  if (f->format.empty()) {
    return UsageError(
        io, "export",
        "--format is required (one of: chrome, perfetto, xspace)");
  }
  bool known = false;
  for (std::string_view k : kFormats) known = known || k == f->format;
  if (!known) {
    return UsageError(io, "export",
                      "unknown --format '" + f->format +
                          "' (one of: chrome, perfetto, xspace)");
  }
  if (paths.size() != 1) {
    return UsageError(io, "export",
                      paths.empty() ? "expects a PATH (a trace file or folder)"
                                    : "expects one PATH");
  }
  if (f->out_path.empty()) {
    return UsageError(io, "export", "-o OUT is required");
  }
  f->path = paths[0];
  return std::nullopt;
}

// Opens the traces at `path` (importing other formats first) into *opened,
// warning about each file that could not be read beside readable ones.
// Returns kExitOk, or the exit code when nothing is readable.
int OpenExportInput(const std::string& path, const CommandIo& io,
                    trace_format::OpenedTraces* opened) {
  auto input = ResolveInput(path, "export", io);
  if (!input.ok()) {
    std::fprintf(io.err, "podscope export: %s\n",
                 std::string(input.status().message()).c_str());
    return kExitUnreadable;
  }
  auto traces = trace_format::OpenTraces(*input);
  if (!traces.ok()) {
    std::fprintf(io.err, "podscope export: %s\n",
                 std::string(traces.status().message()).c_str());
    return traces.status().code() == absl::StatusCode::kNotFound
               ? kExitUnreadable
               : kExitInternal;
  }
  for (const auto& [file, status] : traces->failures) {
    std::fprintf(
        io.err, "podscope export: warning: skipping %s: %s\n", file.c_str(),
        WithoutPathPrefix(std::string(status.message()), file).c_str());
  }
  if (traces->readers.empty()) {
    std::fprintf(io.err, "podscope export: no readable trace at %s\n",
                 path.c_str());
    return kExitUnreadable;
  }
  *opened = *std::move(traces);
  return kExitOk;
}

int ExportToPerfetto(
    const std::vector<const trace_format::TraceReader*>& readers,
    const ExportFlags& f, const CommandIo& io) {
  if (f.gzip) {
    return UsageError(io, "export", "--gzip applies to --format chrome only");
  }
  ProgressLine chunks(io, "exporting", "chunks");
  trace_format::PerfettoExportOptions perfetto_options;
  perfetto_options.align_clocks = !f.no_align;
  perfetto_options.progress = [&](size_t done, size_t total) {
    chunks.Update(done, total);
  };
  auto written =
      trace_format::ExportPerfetto(readers, f.out_path, perfetto_options);
  chunks.Finish();
  if (!written.ok()) {
    std::fprintf(io.err, "podscope export: %s\n",
                 std::string(written.status().message()).c_str());
    return kExitInternal;
  }
  std::fprintf(io.out, "wrote %s events (%s packets, %s bytes) from %s to %s\n",
               FormatCount(written->events).c_str(),
               FormatCount(written->packets).c_str(),
               FormatCount(written->bytes).c_str(),
               Plural(readers.size(), "file").c_str(), f.out_path.c_str());
  return kExitOk;
}

int ExportToXSpace(const std::vector<const trace_format::TraceReader*>& readers,
                   const ExportFlags& f, const CommandIo& io) {
  ProgressLine progress(io, "exporting", "tracks");
  trace_format::XSpaceExportOptions options;
  options.progress = [&](size_t done, size_t total) {
    progress.Update(done, total);
  };
  auto stats =
      trace_format::ExportXSpace(readers, f.out_path, f.session, options);
  progress.Finish();
  if (!stats.ok()) {
    std::fprintf(io.err, "podscope export: %s\n",
                 std::string(stats.status().message()).c_str());
    return kExitInternal;
  }
  std::fprintf(io.out, "wrote %s events from %s to %s\n",
               FormatCount(stats->events).c_str(),
               Plural(readers.size(), "file").c_str(),
               stats->files.size() == 1 ? stats->files[0].c_str()
                                        : std::filesystem::path(stats->files[0])
                                              .parent_path()
                                              .string()
                                              .c_str());
  return kExitOk;
}

// Damaged chunks are found while exporting, so they are reported
// afterwards.
void WarnRecovered(const std::vector<const trace_format::TraceReader*>& readers,
                   const CommandIo& io) {
  for (const auto* r : readers) {
    const trace_format::RecoveryReport report = r->report();
    if (report.intact()) continue;
    std::string why = report.has_index ? "" : "not closed: no index";
    if (!report.skipped.empty()) {
      absl::StrAppend(&why, why.empty() ? "" : ", ",
                      FormatCount(report.skipped_bytes()),
                      " damaged bytes skipped");
    }
    std::fprintf(io.err,
                 "podscope export: warning: %s was recovered (%s); exported "
                 "what could be read\n",
                 r->name().c_str(), why.c_str());
  }
}

int ExportToChrome(const std::vector<const trace_format::TraceReader*>& readers,
                   const ExportFlags& f, const CommandIo& io) {
  ProgressLine progress(io, "exporting", "tracks");
  trace_format::ChromeExportOptions options;
  options.gzip = f.gzip || f.out_path.ends_with(".gz");
  options.align_clocks = !f.no_align;
  options.progress = [&](size_t done, size_t total) {
    progress.Update(done, total);
  };
  auto stats = trace_format::ExportChrome(readers, f.out_path, options);
  progress.Finish();
  if (!stats.ok()) {
    std::fprintf(io.err, "podscope export: %s\n",
                 std::string(stats.status().message()).c_str());
    return kExitInternal;
  }
  WarnRecovered(readers, io);
  std::string size = absl::StrCat(FormatCount(stats->bytes), " bytes");
  if (stats->bytes >= 1024)
    absl::StrAppend(&size, ", ", FormatBytes(stats->bytes));
  if (options.gzip) absl::StrAppend(&size, ", gzip");
  std::fprintf(io.out, "wrote %s events (%s) from %s to %s\n",
               FormatCount(stats->events).c_str(), size.c_str(),
               Plural(readers.size(), "file").c_str(), f.out_path.c_str());
  return kExitOk;
}

int RunExport(std::span<const std::string> args, const CommandIo& io) {
  ExportFlags f;
  if (std::optional<int> done = ParseExportFlags(args, io, &f)) return *done;
  trace_format::OpenedTraces opened;
  if (int exit = OpenExportInput(f.path, io, &opened); exit != kExitOk) {
    return exit;
  }
  std::vector<const trace_format::TraceReader*> readers;
  for (const auto& r : opened.readers) readers.push_back(r.get());
  if (f.format == "perfetto") return ExportToPerfetto(readers, f, io);
  if (f.format == "xspace") return ExportToXSpace(readers, f, io);
  return ExportToChrome(readers, f, io);
}

}  // namespace

const Command kExportCommand = {
    "export",
    "Convert traces to Chrome trace JSON or Perfetto's trace format",
    kHelp,
    RunExport,
};

}  // namespace podscope::tools
