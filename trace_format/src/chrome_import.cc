// Chrome trace JSON / Kineto import: one podtrace file per input file, its
// metadata filled from what the JSON says (rank, world size, process name)
// and from the session the files form.
#include "podscope/trace_format/chrome_import.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "chrome_convert.h"
#include "json_stream.h"
#include "podscope/base/file_names.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/host_alignment.h"
#include "podscope/trace_format/import.h"
#include "podscope/trace_format/writer.h"

namespace podscope::trace_format {
namespace fs = std::filesystem;
using json_internal::ChromeConverter;
using json_internal::JsonEventStream;

namespace {

constexpr int64_t kEpoch2001Ns = int64_t{978307200} * 1000000000;

// "sampled_rank-0.json.gz" -> "sampled_rank-0"; only [A-Za-z0-9._-] kept.
std::string FileStem(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (std::string_view ext : {".gz", ".json", ".trace"}) {
    if (name.size() > ext.size() && name.ends_with(ext)) {
      name.resize(name.size() - ext.size());
    }
  }
  for (char& c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return name.empty() ? "trace" : name;
}

struct Converted {
  ChromeImportResult result;
  proto::Metadata metadata;
  std::string host;
  // Whether the times are wall-clock (Kineto's are), and the first.
  bool wall_clock = false;
  int64_t min_ts = 0;
  std::vector<std::pair<std::string, int64_t>> collective_ends;
};

// The file's clock: reference = local + offset. The fitted offset when the
// run's ranks were lined up by their collectives, else an offset of 0 to
// the wall clock every rank's times are already on.
void AddClockOffsetTo(TraceWriter* writer, const Converted& c,
                      const proto::ClockOffset* fitted) {
  if (!c.wall_clock) return;
  proto::ClockOffset offset;
  if (fitted != nullptr) {
    offset = *fitted;
  } else {
    offset.set_offset_ns(0);
    offset.set_reference("wall clock (trace timestamps)");
  }
  offset.set_local_monotonic_ns(c.min_ts);
  writer->AddClockOffset(offset);
}

// Converts one stream into `writer`, filling `metadata`.
absl::Status Convert(JsonEventStream* in, TraceWriter* writer,
                     const std::function<bool()>& tick, Converted* out,
                     const std::string& source, uint32_t file_index) {
  ChromeConverter converter(writer, in, file_index);
  if (auto s = converter.Run(tick); !s.ok()) return s;
  proto::Metadata& m = out->metadata;
  m.set_pid(converter.main_pid());
  m.set_process_index(converter.rank());
  m.set_process_count(converter.world_size());
  if (!converter.process_name().empty()) {
    m.add_command_line(converter.process_name());
  }
  m.set_producer(converter.is_kineto() ? "PyTorch profiler (Kineto) trace, "
                                         "imported by podscope"
                                       : "Chrome trace JSON, imported by "
                                         "podscope");
  (*m.mutable_capture_options())["source_format"] =
      converter.is_kineto() ? "kineto" : "chrome_json";
  (*m.mutable_capture_options())["source_file"] = source;
  for (const auto& [k, v] : converter.attributes()) {
    (*m.mutable_attributes())[k] = v;
  }
  if (!converter.warnings().empty()) {
    (*m.mutable_attributes())["import.warnings"] =
        absl::StrJoin(converter.warnings(), "\n");
  }
  for (const auto& [local, tracks] : converter.devices()) {
    proto::Device* d = m.add_devices();
    const int rank = std::max(converter.rank(), 0);
    d->set_local_hardware_id(static_cast<int32_t>(local));
    d->set_global_id(static_cast<int32_t>(std::min<int64_t>(
        int64_t{rank} * 1000 + static_cast<int64_t>(local), INT32_MAX)));
    d->set_process_index(converter.rank());
    d->set_kind("GPU");
    d->set_platform("cuda");
    for (uint32_t t : tracks) d->add_stream_track_ids(t);
  }
  // Kineto's timestamps are wall-clock microseconds: say so, so that the
  // viewer shows real times.
  out->collective_ends = converter.CollectiveEnds();
  if (converter.min_ts() != INT64_MAX && converter.min_ts() > kEpoch2001Ns) {
    writer->AddClockSnapshot(converter.min_ts(), converter.min_ts());
    // Every rank's times are on a wall clock: its offset to the reference
    // is added once the run's ranks are lined up (AddClockOffsetTo).
    out->wall_clock = true;
    out->min_ts = converter.min_ts();
    m.set_start_monotonic_ns(converter.min_ts());
    m.set_start_realtime_ns(converter.min_ts());
  } else if (converter.min_ts() != INT64_MAX) {
    m.set_start_monotonic_ns(converter.min_ts());
  }
  out->host = converter.rank() >= 0 ? absl::StrCat("rank", converter.rank())
                                    : FileStem(source);
  m.set_host(out->host);
  for (const std::string& w : converter.warnings()) {
    out->result.warnings.push_back(absl::StrCat(source, ": ", w));
  }
  out->result.events = converter.events();
  return absl::OkStatus();
}

}  // namespace

bool LooksLikeJson(std::string_view head) {
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  while (!head.empty() && absl::ascii_isspace(head.front())) {
    head.remove_prefix(1);
  }
  return !head.empty() && (head.front() == '{' || head.front() == '[');
}

namespace {

// The files' sizes together (a missing file fails when it is opened).
uint64_t TotalBytes(const std::vector<std::string>& files) {
  uint64_t total = 0;
  for (const std::string& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    if (!ec) total += size;
  }
  return total;
}

// The same files, in any order, make the same session.
std::string SessionOfFiles(const std::vector<std::string>& files) {
  std::vector<std::string> names;
  for (const std::string& f : files) names.push_back(FileStem(f));
  std::sort(names.begin(), names.end());
  return absl::StrFormat("import-%016x",
                         std::hash<std::string>()(absl::StrJoin(names, "\n")));
}

// File `index` of `count` in `session`: a file that named no process of
// its own becomes process `index`, its devices numbered apart.
void PlaceInSession(const std::string& session, size_t index, size_t count,
                    proto::Metadata* m) {
  m->set_session_id(session);
  if (m->process_index() < 0) {
    m->set_process_index(static_cast<int32_t>(index));
    for (proto::Device& d : *m->mutable_devices()) {
      d.set_process_index(static_cast<int32_t>(index));
      d.set_global_id(static_cast<int32_t>(index * 1000) +
                      d.local_hardware_id());
    }
  }
  if (m->process_count() <= 0) {
    m->set_process_count(static_cast<int32_t>(count));
  }
}

// A converted file whose writer is left open: the ranks' offsets are
// known only once every rank's collectives are.
struct OpenFile {
  size_t index = 0;
  std::string temp;
  std::unique_ptr<TraceWriter> writer;
  Converted converted;
};

// The ranks of a run of several files lined up by the NCCL collectives
// they all ran (host_alignment.h), the first rank's clock the reference;
// empty when there is one file, or when the fit cannot be made for every
// rank (their wall clocks then stand, as the files have them).
std::vector<proto::ClockOffset> AlignRanks(const std::vector<OpenFile>& open) {
  if (open.size() < 2) return {};
  std::vector<AlignInput> inputs(open.size());
  for (size_t k = 0; k < open.size(); ++k) {
    if (!open[k].converted.wall_clock) return {};
    inputs[k].collective_ends = open[k].converted.collective_ends;
  }
  return AlignImportedHosts(
      inputs, absl::StrCat(open[0].converted.host, " (by collectives)"));
}

}  // namespace

absl::StatusOr<ChromeImportResult> ImportChromeJsonFiles(
    const std::vector<std::string>& files, const std::string& out_dir,
    const ChromeImportOptions& options) {
  if (files.empty()) {
    return absl::InvalidArgumentError("no Chrome trace JSON file to import");
  }
  std::string failed_part;
  base::UniqueFd out_fd;
  std::error_code ec = base::MakeDirectories(out_dir, &failed_part);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", failed_part, ": ", ec.message()));
  }
  if ((ec = base::OpenDirectory(out_dir, &out_fd))) {
    return absl::InternalError(
        absl::StrCat("cannot open ", out_dir, ": ", ec.message()));
  }
  const uint64_t total = TotalBytes(files);
  uint64_t done_before = 0;
  const std::string session =
      options.session_id.empty() ? SessionOfFiles(files) : options.session_id;

  ChromeImportResult result;
  std::vector<std::string> temps;
  auto cleanup = [&] {
    for (const std::string& t : temps) fs::remove(t, ec);
    for (const std::string& p : result.paths) fs::remove(p, ec);
  };
  std::vector<OpenFile> open;
  // A file that fails: reported and skipped when the caller asks so,
  // otherwise the end of the import.
  auto fail = [&](size_t i, const std::string& temp, absl::Status s) -> bool {
    fs::remove(temp, ec);
    std::erase(temps, temp);
    if (options.on_file_error && !absl::IsCancelled(s)) {
      options.on_file_error(files[i], s);
      if (options.files_done) options.files_done(i + 1, files.size());
      return true;
    }
    for (OpenFile& o : open) {
      if (o.writer) o.writer->Close().IgnoreError();
    }
    cleanup();
    return false;
  };
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string temp =
        absl::StrCat(out_dir, "/.import-", getpid(), "-", i, ".partial");
    auto in = JsonEventStream::Open(files[i]);
    if (!in.ok()) {
      if (fail(i, temp, in.status())) continue;
      return in.status();
    }
    temps.push_back(temp);
    auto writer = TraceWriter::Create(temp);
    if (!writer.ok()) {
      if (fail(i, temp, writer.status())) continue;
      return writer.status();
    }
    Converted converted;
    auto tick = [&]() {
      if (options.progress) {
        options.progress(done_before + (*in)->source_offset(), total);
      }
      return options.cancel == nullptr || !options.cancel->load();
    };
    absl::Status s = Convert(in->get(), writer->get(), tick, &converted,
                             files[i], static_cast<uint32_t>(i));
    // What was converted goes to the file now; the writer then holds
    // little while the other ranks convert.
    if (s.ok()) s = (*writer)->Flush();
    if (!s.ok()) {
      (*writer)->Close().IgnoreError();
      writer->reset();
      if (fail(i, temp, s)) continue;
      return s;
    }
    const auto size = fs::file_size(files[i], ec);
    if (!ec) done_before += size;
    open.push_back({i, temp, std::move(*writer), std::move(converted)});
  }
  const std::vector<proto::ClockOffset> fitted = AlignRanks(open);
  for (size_t k = 0; k < open.size(); ++k) {
    OpenFile& o = open[k];
    const size_t i = o.index;
    AddClockOffsetTo(o.writer.get(), o.converted,
                     fitted.empty() ? nullptr : &fitted[k]);
    PlaceInSession(session, i, files.size(), &o.converted.metadata);
    o.writer->SetMetadata(o.converted.metadata);
    absl::Status s = o.writer->Close();
    o.writer.reset();
    if (!s.ok()) {
      if (fail(i, o.temp, s)) continue;
      return s;
    }
    // The host may come from the file's name or its content: one
    // sanitiser makes it a name, and a name taken gets a suffix.
    const std::string stem =
        absl::StrCat(base::SafeFileComponent(o.converted.host), ".",
                     o.converted.metadata.pid());
    std::string name;
    std::error_code e = base::RenameToFreshName(
        out_fd.get(), fs::path(o.temp).filename().string(), stem,
        kFileExtension, &name);
    if (e) {
      for (OpenFile& rest : open) {
        if (rest.writer) rest.writer->Close().IgnoreError();
      }
      cleanup();
      return absl::InternalError(absl::StrCat("cannot rename ", o.temp, " to ",
                                              out_dir, "/", stem,
                                              "*: ", e.message()));
    }
    const std::string path = absl::StrCat(out_dir, "/", name);
    std::erase(temps, o.temp);
    result.paths.push_back(path);
    result.events += o.converted.result.events;
    for (std::string& w : o.converted.result.warnings) {
      result.warnings.push_back(std::move(w));
    }
    if (options.files_done) options.files_done(i + 1, files.size());
  }
  if (options.progress) options.progress(total, total);
  return result;
}

absl::StatusOr<ChromeImportResult> ImportChromeJsonBuffer(
    std::string_view data, const std::string& name,
    const std::string& out_path) {
  auto in = JsonEventStream::FromBuffer(data, name);
  PODSCOPE_ASSIGN_OR_RETURN(auto writer, TraceWriter::Create(out_path));
  Converted converted;
  absl::Status s =
      Convert(in.get(), writer.get(), nullptr, &converted, name, 0);
  if (s.ok()) {
    AddClockOffsetTo(writer.get(), converted, nullptr);
    converted.metadata.set_session_id("import");
    if (converted.metadata.process_index() < 0) {
      converted.metadata.set_process_index(0);
    }
    writer->SetMetadata(converted.metadata);
    s = writer->Close();
  }
  if (!s.ok()) return s;
  return converted.result;
}

// The import dispatch's entry for Chrome trace JSON (import.h).
absl::StatusOr<std::vector<std::string>> ImportChromeTrace(
    const std::vector<std::string>& files, const std::string& out_dir,
    const ImportOptions& options) {
  ChromeImportOptions chrome;
  chrome.session_id = options.session;
  chrome.cancel = options.cancel;
  chrome.on_file_error = options.on_file_error;
  chrome.files_done = options.progress;
  PODSCOPE_ASSIGN_OR_RETURN(auto result,
                            ImportChromeJsonFiles(files, out_dir, chrome));
  return std::move(result.paths);
}

}  // namespace podscope::trace_format
