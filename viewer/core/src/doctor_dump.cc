// Reads a job doctor's journals (doctor_dump.h): every field checked for
// its type and against JournalLimits before it is used, so that a
// truncated, damaged or hostile file is refused with a reason.
#include "podscope/viewer/doctor_dump.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "podscope/base/status_macros.h"

namespace podscope::viewer {
namespace {

namespace dom = simdjson::dom;
namespace fs = std::filesystem;

constexpr std::string_view kFormat = "podscope.doctor.journal";

// absl's own string_view, for StrCat.
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

// One object's fields, each error naming the file and the field's path.
class ObjectReader {
 public:
  ObjectReader(dom::object object, const std::string& path, std::string where)
      : object_(object), path_(path), where_(std::move(where)) {}

  absl::Status Error(std::string_view field, std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": field '", where_, A(field), "' ", A(what)));
  }

  // nullopt when absent.
  std::optional<dom::element> Get(std::string_view field) const {
    dom::element e;
    if (object_.at_key(field).get(e) != simdjson::SUCCESS) return std::nullopt;
    return e;
  }

  absl::Status String(std::string_view field, size_t max, bool required,
                      std::string* out) const {
    std::optional<dom::element> e = Get(field);
    if (!e) return required ? Error(field, "is missing") : absl::OkStatus();
    std::string_view v;
    if (e->get_string().get(v) != simdjson::SUCCESS) {
      return Error(field, "is not a string");
    }
    if (v.size() > max) {
      return Error(field, absl::StrCat("is longer than ", max, " bytes"));
    }
    out->assign(v);
    return absl::OkStatus();
  }

  absl::Status Int(std::string_view field, bool required, int64_t* out) const {
    std::optional<dom::element> e = Get(field);
    if (!e) return required ? Error(field, "is missing") : absl::OkStatus();
    if (e->get_int64().get(*out) != simdjson::SUCCESS) {
      return Error(field, "is not an integer");
    }
    return absl::OkStatus();
  }

  absl::Status Bool(std::string_view field, bool* out) const {
    std::optional<dom::element> e = Get(field);
    if (!e) return absl::OkStatus();
    if (e->get_bool().get(*out) != simdjson::SUCCESS) {
      return Error(field, "is not true or false");
    }
    return absl::OkStatus();
  }

  absl::Status Strings(std::string_view field, std::vector<std::string>* out) {
    std::optional<dom::element> e = Get(field);
    if (!e) return absl::OkStatus();
    dom::array a;
    if (e->get_array().get(a) != simdjson::SUCCESS) {
      return Error(field, "is not an array");
    }
    if (a.size() > JournalLimits::kMaxScopes) {
      return Error(field, absl::StrCat("has more than ",
                                       JournalLimits::kMaxScopes, " scopes"));
    }
    for (dom::element s : a) {
      std::string_view v;
      if (s.get_string().get(v) != simdjson::SUCCESS) {
        return Error(field, "holds something other than strings");
      }
      if (v.size() > JournalLimits::kMaxString) {
        return Error(field, absl::StrCat("holds a name longer than ",
                                         JournalLimits::kMaxString, " bytes"));
      }
      out->emplace_back(v);
    }
    return absl::OkStatus();
  }

 private:
  dom::object object_;
  const std::string& path_;
  std::string where_;
};

absl::Status ReadEntry(dom::element e, const std::string& path, size_t index,
                       JournalCallEntry* out) {
  const std::string where = absl::StrCat("entries[", index, "].");
  dom::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": entries[", index, "] is not an object"));
  }
  ObjectReader r(o, path, where);
  constexpr size_t kMax = JournalLimits::kMaxString;
  PODSCOPE_RETURN_IF_ERROR(r.String("group", kMax, true, &out->group));
  PODSCOPE_RETURN_IF_ERROR(r.Int("sequence", true, &out->sequence));
  PODSCOPE_RETURN_IF_ERROR(r.String("kind", kMax, true, &out->kind));
  PODSCOPE_RETURN_IF_ERROR(r.String("dtype", kMax, false, &out->dtype));
  PODSCOPE_RETURN_IF_ERROR(r.Int("count", false, &out->count));
  PODSCOPE_RETURN_IF_ERROR(r.String("op", kMax, false, &out->op));
  PODSCOPE_RETURN_IF_ERROR(r.Int("root", false, &out->root));
  PODSCOPE_RETURN_IF_ERROR(r.Strings("scopes", &out->scopes));
  PODSCOPE_RETURN_IF_ERROR(r.Int("tid", false, &out->tid));
  PODSCOPE_RETURN_IF_ERROR(r.Int("entered_ns", true, &out->entered_ns));
  PODSCOPE_RETURN_IF_ERROR(r.Int("finished_ns", false, &out->finished_ns));
  PODSCOPE_RETURN_IF_ERROR(r.Bool("ok", &out->ok));
  if (out->finished_ns != 0 && out->finished_ns < out->entered_ns) {
    return r.Error("finished_ns", "is before entered_ns");
  }
  return absl::OkStatus();
}

absl::Status ReadWhere(const ObjectReader& top, const std::string& path,
                       std::optional<JournalWhere>* out) {
  std::optional<dom::element> e = top.Get("where");
  if (!e) return absl::OkStatus();
  dom::object o;
  if (e->get_object().get(o) != simdjson::SUCCESS) {
    return top.Error("where", "is not an object");
  }
  ObjectReader r(o, path, "where.");
  JournalWhere w;
  PODSCOPE_RETURN_IF_ERROR(r.Int("tid", false, &w.tid));
  PODSCOPE_RETURN_IF_ERROR(r.Bool("main_thread", &w.main_thread));
  PODSCOPE_RETURN_IF_ERROR(r.Strings("scopes", &w.scopes));
  PODSCOPE_RETURN_IF_ERROR(
      r.Int("innermost_since_ns", false, &w.innermost_since_ns));
  PODSCOPE_RETURN_IF_ERROR(r.Int("last_event_ns", false, &w.last_event_ns));
  *out = std::move(w);
  return absl::OkStatus();
}

absl::Status ReadHeader(const ObjectReader& r, RankJournal* j) {
  std::string format;
  PODSCOPE_RETURN_IF_ERROR(r.String("format", 64, false, &format));
  int64_t version = 0;
  PODSCOPE_RETURN_IF_ERROR(r.Int("version", false, &version));
  // A file without format and version is the first, unversioned journal.
  if (!format.empty() && format != kFormat) {
    return r.Error("format", absl::StrCat("is '", format, "', expected '",
                                          A(kFormat), "'"));
  }
  if (version < 0 || version > JournalLimits::kMaxVersion) {
    return r.Error("version",
                   absl::StrCat("is ", version, "; this reader knows up to ",
                                JournalLimits::kMaxVersion));
  }
  j->version = static_cast<int>(version);
  constexpr size_t kMax = JournalLimits::kMaxString;
  PODSCOPE_RETURN_IF_ERROR(r.Int("rank", true, &j->rank));
  PODSCOPE_RETURN_IF_ERROR(r.Int("pid", false, &j->pid));
  PODSCOPE_RETURN_IF_ERROR(r.String("host", kMax, false, &j->host));
  std::string clock = "job";
  PODSCOPE_RETURN_IF_ERROR(r.String("clock", 64, false, &clock));
  if (clock != "job") {
    return r.Error("clock", absl::StrCat("is '", clock, "', expected 'job'"));
  }
  PODSCOPE_RETURN_IF_ERROR(r.Int("written_ns", false, &j->written_ns));
  JournalVerdict& v = j->verdict;
  PODSCOPE_RETURN_IF_ERROR(
      r.String("verdict", JournalLimits::kMaxSentence, false, &v.sentence));
  PODSCOPE_RETURN_IF_ERROR(r.String("verdict_kind", 64, false, &v.kind));
  if (v.kind.empty() && !v.sentence.empty()) v.kind = "unknown";
  PODSCOPE_RETURN_IF_ERROR(r.Int("verdict_rank", false, &v.rank));
  PODSCOPE_RETURN_IF_ERROR(r.String("verdict_group", kMax, false, &v.group));
  PODSCOPE_RETURN_IF_ERROR(r.Int("verdict_sequence", false, &v.sequence));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RankJournal> ParseJournal(std::string_view text,
                                         const std::string& path) {
  if (text.size() > JournalLimits::kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": larger than ",
                                                   JournalLimits::kMaxFileBytes,
                                                   " bytes; not a journal"));
  }
  dom::parser parser;
  dom::element root;
  const simdjson::padded_string padded(text);
  if (auto err = parser.parse(padded).get(root); err != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a complete JSON journal (",
                     simdjson::error_message(err), ")"));
  }
  dom::object top;
  if (root.get_object().get(top) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a journal (expected a JSON object)"));
  }
  RankJournal j;
  j.path = path;
  ObjectReader r(top, path, "");
  PODSCOPE_RETURN_IF_ERROR(ReadHeader(r, &j));
  PODSCOPE_RETURN_IF_ERROR(ReadWhere(r, path, &j.where));
  std::optional<dom::element> entries = r.Get("entries");
  if (!entries) return r.Error("entries", "is missing");
  dom::array a;
  if (entries->get_array().get(a) != simdjson::SUCCESS) {
    return r.Error("entries", "is not an array");
  }
  if (a.size() > JournalLimits::kMaxEntries) {
    return r.Error(
        "entries",
        absl::StrCat("has more than ", JournalLimits::kMaxEntries, " entries"));
  }
  j.entries.reserve(a.size());
  size_t index = 0;
  for (dom::element e : a) {
    JournalCallEntry entry;
    PODSCOPE_RETURN_IF_ERROR(ReadEntry(e, path, index++, &entry));
    j.entries.push_back(std::move(entry));
  }
  return j;
}

std::optional<DoctorDump> ReadDoctorDump(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(".journal.json") && it->is_regular_file(ec)) {
      files.push_back(it->path());
    }
    if (files.size() >= JournalLimits::kMaxFiles) break;
  }
  if (files.empty()) return std::nullopt;
  std::sort(files.begin(), files.end());
  DoctorDump dump;
  for (const fs::path& file : files) {
    const std::string path = file.string();
    const uintmax_t size = fs::file_size(file, ec);
    if (ec || size > JournalLimits::kMaxFileBytes) {
      dump.problems.push_back(ec ? absl::StrCat(path, ": ", ec.message())
                                 : absl::StrCat(path, ": larger than ",
                                                JournalLimits::kMaxFileBytes,
                                                " bytes; not a journal"));
      continue;
    }
    std::ifstream in(file, std::ios::binary);
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    text.resize(static_cast<size_t>(in.gcount()));
    auto j = ParseJournal(text, path);
    if (!j.ok()) {
      dump.problems.emplace_back(j.status().message());
      continue;
    }
    dump.journals.push_back(std::move(*j));
  }
  std::stable_sort(dump.journals.begin(), dump.journals.end(),
                   [](const RankJournal& a, const RankJournal& b) {
                     return a.rank < b.rank;
                   });
  return dump;
}

}  // namespace podscope::viewer
