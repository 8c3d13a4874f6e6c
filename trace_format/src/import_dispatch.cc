// Format detection and ResolveTracePath: finds the foreign traces under a
// path, groups them by run, and imports each run into a cache folder that is
// reused while its inputs are unchanged.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/base/coding.h"
#include "podscope/base/file_names.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/import.h"

namespace podscope::trace_format {
namespace fs = std::filesystem;

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

// By extension only: what a file's name says it is, if anything.
std::optional<SourceFormat> FormatByName(std::string_view name) {
  if (EndsWith(name, kFileExtension)) return SourceFormat::kPodtrace;
  if (EndsWith(name, ".xplane.pb") || EndsWith(name, ".pb")) {
    return SourceFormat::kXSpace;
  }
  if (EndsWith(name, ".json") || EndsWith(name, ".json.gz")) {
    return SourceFormat::kChromeJson;
  }
  return std::nullopt;
}

// An XSpace message starts with one of its fields: planes (1), errors (2),
// warnings (3) or hostnames (4), all length-delimited, and the length fits
// in the file.
bool LooksLikeXSpace(std::string_view head, uint64_t file_size) {
  if (head.empty()) return false;
  const auto tag = static_cast<unsigned char>(head[0]);
  if (tag != 0x0a && tag != 0x12 && tag != 0x1a && tag != 0x22) return false;
  uint64_t length = 0;
  const char* begin = head.data() + 1;
  const char* end =
      base::DecodeVarint64(begin, head.data() + head.size(), &length);
  if (end == nullptr) return false;
  const uint64_t header = 1 + static_cast<uint64_t>(end - begin);
  return length <= file_size && header <= file_size - length;
}

std::string_view SkipJsonSpace(std::string_view s) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);  // UTF-8 BOM
  while (!s.empty() &&
         (s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[0] == '\r')) {
    s.remove_prefix(1);
  }
  return s;
}

int64_t MtimeNs(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             t.time_since_epoch())
      .count();
}

// A file name without the extensions that mark its format.
std::string Stem(const fs::path& p) {
  std::string name = p.filename().string();
  for (std::string_view ext :
       {".xplane.pb", ".pb", ".pt.trace.json.gz", ".pt.trace.json",
        ".trace.json.gz", ".trace.json", ".json.gz", ".json"}) {
    if (EndsWith(name, ext) && name.size() > ext.size()) {
      return name.substr(0, name.size() - ext.size());
    }
  }
  return name;
}

struct Run {
  SourceFormat format;
  std::string session;
  std::vector<std::string> files;  // absolute, sorted
};

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string CacheRoot(const ImportOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return (fs::path(xdg) / "podscope" / "imports").string();
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return (fs::path(home) / ".cache" / "podscope" / "imports").string();
  }
  return (fs::temp_directory_path() / "podscope-imports").string();
}

std::string ReadSmallFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "";
  return std::string(std::istreambuf_iterator<char>(in), {});
}

absl::Status WriteSmallFile(const fs::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) {
    return absl::InternalError(absl::StrCat(p.string(), ": cannot write"));
  }
  return absl::OkStatus();
}

// Failures are kept beside an import as "file\tmessage" lines so that a
// reused import reports them again.
void ReplayFailures(const fs::path& dir, const ImportOptions& options) {
  if (!options.on_file_error) return;
  const std::string text = ReadSmallFile(dir / ".failures");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    options.on_file_error(line.substr(0, tab),
                          absl::DataLossError(line.substr(tab + 1)));
  }
}

absl::StatusOr<std::vector<std::string>> ImportRun(
    const Run& run, const std::string& out_dir, const ImportOptions& options) {
  ImportOptions run_options = options;
  run_options.session = run.session;
  switch (run.format) {
    case SourceFormat::kXSpace:
      return ImportXSpace(run.files, out_dir, run_options);
    case SourceFormat::kChromeJson:
      return ImportChromeTrace(run.files, out_dir, run_options);
    case SourceFormat::kPodtrace:
      break;
  }
  return absl::InternalError("podtrace files need no import");
}

// Imports `runs` into a fresh folder beside the cache entry, then renames
// it into place, so that a reader never sees half an import.
absl::StatusOr<std::string> ImportIntoCache(const std::vector<Run>& runs,
                                            const std::string& manifest,
                                            const ImportOptions& options) {
  const fs::path root = CacheRoot(options);
  const fs::path final_dir = root / absl::StrFormat("%016x", Fnv1a(manifest));
  std::error_code ec;
  if (ReadSmallFile(final_dir / ".manifest") == manifest) {
    ReplayFailures(final_dir, options);
    return final_dir.string();
  }
  fs::create_directories(root, ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrCat(
        root.string(), ": cannot create the import cache: ", ec.message()));
  }
  std::random_device rd;
  const fs::path tmp_dir =
      root / absl::StrFormat(".tmp-%d-%08x", getpid(), rd());
  fs::create_directories(tmp_dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(tmp_dir.string(), ": ", ec.message()));
  }
  std::string failures;
  ImportOptions inner = options;
  inner.on_file_error = [&](const std::string& file, const absl::Status& s) {
    absl::StrAppend(&failures, file, "\t", s.message(), "\n");
    if (options.on_file_error) options.on_file_error(file, s);
  };
  if (!options.on_file_error) inner.on_file_error = nullptr;
  for (const Run& run : runs) {
    auto written = ImportRun(run, (tmp_dir / run.session).string(), inner);
    if (!written.ok()) {
      fs::remove_all(tmp_dir, ec);
      return written.status();
    }
  }
  absl::Status s = WriteSmallFile(tmp_dir / ".failures", failures);
  if (s.ok()) s = WriteSmallFile(tmp_dir / ".manifest", manifest);
  if (!s.ok()) {
    fs::remove_all(tmp_dir, ec);
    return s;
  }
  // An older or broken entry under the same key is replaced; one that
  // another process completed meanwhile is used as it is.
  if (fs::exists(final_dir, ec)) {
    if (ReadSmallFile(final_dir / ".manifest") == manifest) {
      fs::remove_all(tmp_dir, ec);
      return final_dir.string();
    }
    fs::remove_all(final_dir, ec);
  }
  fs::rename(tmp_dir, final_dir, ec);
  if (ec) {
    std::error_code ignored;
    if (ReadSmallFile(final_dir / ".manifest") == manifest) {
      fs::remove_all(tmp_dir, ignored);
      return final_dir.string();
    }
    fs::remove_all(tmp_dir, ignored);
    return absl::InternalError(absl::StrCat(
        final_dir.string(), ": cannot store the import: ", ec.message()));
  }
  return final_dir.string();
}

}  // namespace

std::string_view SourceFormatName(SourceFormat format) {
  switch (format) {
    case SourceFormat::kPodtrace:
      return "podtrace";
    case SourceFormat::kXSpace:
      return "XSpace";
    case SourceFormat::kChromeJson:
      return "Chrome trace JSON";
  }
  return "unknown";
}

absl::StatusOr<SourceFormat> DetectFormat(const std::string& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(absl::StrCat(path, ": ", ec.message()));
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot be opened"));
  }
  char buf[64];
  const size_t n = std::fread(buf, 1, sizeof(buf), f);
  std::fclose(f);
  const std::string_view head(buf, n);
  if (head.size() >= sizeof(kMagic) &&
      head.substr(0, sizeof(kMagic)) ==
          std::string_view(kMagic, sizeof(kMagic))) {
    return SourceFormat::kPodtrace;
  }
  if (head.size() >= 2 && head[0] == '\x1f' && head[1] == '\x8b') {
    // gzip: Chrome trace JSON is the only gzipped format read.
    return SourceFormat::kChromeJson;
  }
  const std::string_view json = SkipJsonSpace(head);
  if (!json.empty() && (json[0] == '{' || json[0] == '[')) {
    return SourceFormat::kChromeJson;
  }
  // The XSpace test is a heuristic: a .podtrace whose header was damaged
  // stays a podtrace (its reader says what is wrong with it).
  const std::string name = fs::path(path).filename().string();
  if (EndsWith(name, kFileExtension)) return SourceFormat::kPodtrace;
  if (LooksLikeXSpace(head, size)) return SourceFormat::kXSpace;
  if (auto by_name = FormatByName(name)) {
    return *by_name;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path,
      ": not a trace Podscope can read (expected a .podtrace file, an XSpace "
      ".xplane.pb or Chrome trace JSON)"));
}

absl::StatusOr<std::string> ResolveTracePath(const std::string& path,
                                             const ImportOptions& options) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return path;
  std::vector<std::pair<fs::path, SourceFormat>> foreign;
  fs::path root;
  if (fs::is_regular_file(st)) {
    PODSCOPE_ASSIGN_OR_RETURN(auto format, DetectFormat(path));
    if (format == SourceFormat::kPodtrace) return path;
    foreign.emplace_back(fs::absolute(path, ec).lexically_normal(), format);
  } else if (fs::is_directory(st)) {
    root = fs::absolute(path, ec).lexically_normal();
    for (fs::recursive_directory_iterator
             it(path, fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (!it->is_regular_file(type_ec)) continue;
      const std::string name = it->path().filename().string();
      const auto by_name = FormatByName(name);
      // In folders only XProf's own name counts as XSpace: run folders
      // also hold other tools' .pb files.
      if (!by_name || (*by_name == SourceFormat::kXSpace &&
                       !EndsWith(name, ".xplane.pb"))) {
        continue;
      }
      // A folder with podtrace files is opened as it is.
      if (*by_name == SourceFormat::kPodtrace) return path;
      foreign.emplace_back(fs::absolute(it->path(), ec).lexically_normal(),
                           *by_name);
    }
    if (foreign.empty()) return path;
  } else {
    return path;
  }

  // One run per folder and format: XProf's plugins/profile/<run>/<host>
  // files, or the ranks of a Kineto export.
  std::map<std::pair<std::string, int>, Run> runs;
  for (const auto& [file, format] : foreign) {
    auto& run = runs[{file.parent_path().string(), static_cast<int>(format)}];
    run.format = format;
    run.files.push_back(file.string());
  }
  // XProf run folders may hold JSON written by older tools beside the
  // XSpace files; the XSpace is the trace.
  for (auto it = runs.begin(); it != runs.end();) {
    const bool json_beside_xspace =
        it->second.format == SourceFormat::kChromeJson &&
        runs.count({it->first.first, static_cast<int>(SourceFormat::kXSpace)});
    it = json_beside_xspace ? runs.erase(it) : std::next(it);
  }
  std::vector<Run> ordered;
  std::map<std::string, int> names;
  std::string manifest =
      absl::StrCat("podscope import ", kImporterVersion, "\n");
  for (auto& [key, run] : runs) {
    std::sort(run.files.begin(), run.files.end());
    const fs::path dir(key.first);
    if (!options.session.empty()) {
      run.session = options.session;
    } else if (root.empty() && dir.parent_path().filename() != "profile") {
      run.session = Stem(run.files.front());  // a lone file
    } else {
      run.session = dir.filename().string();
    }
    // A folder or file name, or the user's --session: one sanitiser makes
    // it the name of the run's folder in the cache.
    run.session = base::SafeFileComponent(run.session);
    if (const int seen = names[run.session]++; seen > 0) {
      absl::StrAppend(&run.session, "-", seen + 1);
    }
    for (const std::string& file : run.files) {
      std::error_code size_ec;
      const uint64_t bytes = fs::file_size(file, size_ec);
      absl::StrAppend(&manifest, static_cast<int>(run.format), "\t",
                      run.session, "\t", file, "\t", bytes, "\t", MtimeNs(file),
                      "\n");
    }
    ordered.push_back(std::move(run));
  }
  return ImportIntoCache(ordered, manifest, options);
}

}  // namespace podscope::trace_format
