// ImportXSpace: the XSpace files of one run, each converted into a podtrace
// file (XSpaceToPodtrace) written under a temporary name and renamed when
// complete. The hosts of a run of several files are lined up first by the
// collectives they all ran (host_alignment.h).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/host_alignment.h"
#include "podscope/trace_format/import.h"
#include "podscope/trace_format/writer.h"
#include "podscope/trace_format/xspace.h"

namespace podscope::trace_format {
namespace fs = std::filesystem;

namespace {

std::string FileStem(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (std::string_view ext : {".xplane.pb", ".pb"}) {
    if (name.size() > ext.size() &&
        name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
      return name.substr(0, name.size() - ext.size());
    }
  }
  return name;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot be opened"));
  }
  std::string data((std::istreambuf_iterator<char>(in)), {});
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return data;
}

// One file into out_dir; returns the path written.
absl::StatusOr<std::string> ImportOne(const std::string& file,
                                      const std::string& out_dir,
                                      const XSpaceImportFacts& facts) {
  PODSCOPE_ASSIGN_OR_RETURN(auto data, ReadWholeFile(file));
  // Written to a temporary name, renamed when complete.
  const fs::path tmp =
      fs::path(out_dir) / absl::StrCat(".import-", facts.process_index, ".tmp");
  PODSCOPE_ASSIGN_OR_RETURN(auto writer, TraceWriter::Create(tmp.string()));
  auto stats = XSpaceToPodtrace(data, facts, *writer);
  if (!stats.ok()) {
    std::error_code ec;
    writer->Close().IgnoreError();
    fs::remove(tmp, ec);
    return stats.status();
  }
  if (absl::Status s = writer->Close(); !s.ok()) return s;
  // The host comes from the file: one sanitiser makes it a name, and a
  // name taken (two files of one host and pid) gets a suffix.
  std::string stem =
      base::SafeFileComponent(stats->host.empty() ? facts.host : stats->host);
  if (stats->pid != 0) absl::StrAppend(&stem, ".", stats->pid);
  base::UniqueFd dir_fd;
  std::string name;
  std::error_code e = base::OpenDirectory(out_dir, &dir_fd);
  if (!e) {
    e = base::RenameToFreshName(dir_fd.get(), tmp.filename().string(), stem,
                                kFileExtension, &name);
  }
  if (e) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return absl::InternalError(absl::StrCat((fs::path(out_dir) / stem).string(),
                                            std::string(kFileExtension),
                                            ": cannot write: ", e.message()));
  }
  const fs::path path = fs::path(out_dir) / name;
  return path.string();
}

// Each file's offset to the first host's clock, from the collectives every
// host ran: XProf's hosts stamp their events with their own wall clocks,
// which differ by whatever NTP left. Empty when the run has one file, or
// when the fit cannot be made for every host (a run half on one clock and
// half on another lines up nothing); then each host's wall clock stands,
// as XProf has it. Each file is parsed here once more than the conversion
// does, one at a time, so that a run of many large files is never held
// whole.
std::vector<proto::ClockOffset> AlignRun(const std::vector<std::string>& files,
                                         const ImportOptions& options) {
  if (files.size() < 2) return {};
  std::vector<AlignInput> inputs(files.size());
  std::string first_host = FileStem(files[0]);
  for (size_t i = 0; i < files.size(); ++i) {
    if (options.cancel != nullptr && options.cancel->load()) return {};
    auto data = ReadWholeFile(files[i]);
    if (!data.ok()) continue;
    tensorflow::profiler::XSpace space;
    if (data->size() > static_cast<size_t>(INT32_MAX) ||
        !space.ParseFromArray(data->data(), static_cast<int>(data->size()))) {
      continue;
    }
    if (i == 0 && !space.hostnames().empty() && !space.hostnames(0).empty()) {
      first_host = space.hostnames(0);
    }
    inputs[i].collective_ends = CollectivesOfXSpace(space).ends;
  }
  return AlignImportedHosts(
      inputs, absl::StrCat("host ", first_host, " (by collectives)"));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ImportXSpace(
    const std::vector<std::string>& files, const std::string& out_dir,
    const ImportOptions& options) {
  std::string failed_part;
  if (std::error_code ec = base::MakeDirectories(out_dir, &failed_part)) {
    return absl::PermissionDeniedError(
        absl::StrCat(failed_part, ": cannot create: ", ec.message()));
  }
  const std::vector<proto::ClockOffset> offsets = AlignRun(files, options);
  std::vector<std::string> written;
  absl::Status first_error;
  size_t failures = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (options.cancel != nullptr && options.cancel->load()) {
      return absl::CancelledError("XSpace import cancelled");
    }
    XSpaceImportFacts facts;
    facts.source = files[i];
    facts.host = FileStem(files[i]);
    facts.session = options.session.empty()
                        ? fs::path(files[i]).parent_path().filename().string()
                        : options.session;
    facts.process_index = static_cast<int32_t>(i);
    facts.process_count = static_cast<int32_t>(files.size());
    if (!offsets.empty()) facts.clock = {offsets[i]};
    auto path = ImportOne(files[i], out_dir, facts);
    if (!path.ok()) {
      if (!options.on_file_error) return path.status();
      options.on_file_error(files[i], path.status());
      if (failures++ == 0) first_error = path.status();
    } else {
      written.push_back(*path);
    }
    if (options.progress) options.progress(i + 1, files.size());
  }
  if (written.empty()) {
    if (first_error.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(out_dir, ": no XSpace file to import"));
    }
    if (failures == 1) return first_error;
    return absl::Status(
        first_error.code(),
        absl::StrCat(first_error.message(), " (and ", failures - 1,
                     " more files of the run could not be "
                     "imported)"));
  }
  return written;
}

}  // namespace podscope::trace_format
