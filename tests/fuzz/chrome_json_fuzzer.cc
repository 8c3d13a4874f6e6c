// libFuzzer target for the Chrome trace JSON / Kineto importer: arbitrary
// bytes are imported as a document, from memory and, as a session of three
// files, through the file reader: the bytes as they are (a gzip input is
// inflated), gzip-wrapped, and gzip-wrapped then cut short. The importer
// must either fail with a message naming the input, or write a podtrace
// file that the reader opens and reads in full; a document must import the
// same from memory and from a file, plain or gzipped; a file that fails
// leaves nothing behind; it must never crash or trip a sanitizer.
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "podscope/trace_format/chrome_import.h"
#include "podscope/trace_format/reader.h"

namespace {

using namespace podscope::trace_format;
namespace fs = std::filesystem;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

std::string Gzip(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer.
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    Fail("deflateInit2", "failed");
  }
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) Fail("deflate", "not finished");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void WriteFile(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) Fail("cannot write", path.string());
}

// The events of an imported file, read in full; aborts if it does not open.
uint64_t ReadAll(const std::string& path) {
  auto reader = TraceReader::Open(path);
  if (!reader.ok()) {
    Fail("an imported file does not open", reader.status().ToString());
  }
  uint64_t events = 0;
  for (const TrackEvents& e : (*reader)->ReadAllTracks(1)) {
    events += e.event_count();
    for (const Slice& s : e.slices) {
      volatile size_t n = (*reader)->GetString(s.name).size();
      (void)n;
    }
  }
  if (events != (*reader)->known_event_count()) {
    Fail("the reader's event count differs from the events read", path);
  }
  return events;
}

const std::string& TempRoot() {
  static const std::string root =
      std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
      "/podscope-fuzz-json-" + std::to_string(getpid());
  return root;
}

// Imports `bytes` from memory: the event count, or nothing for an error.
std::optional<uint64_t> ImportFromMemory(std::string_view bytes) {
  const std::string path = TempRoot() + ".podtrace";
  auto imported = ImportChromeJsonBuffer(bytes, "fuzz.json", path);
  if (!imported.ok()) {
    if (imported.status().message().find("fuzz.json") == std::string::npos) {
      Fail("an import error that does not name the input",
           imported.status().ToString());
    }
    std::remove(path.c_str());
    return std::nullopt;
  }
  const uint64_t events = ReadAll(path);
  if (events != imported->events) {
    Fail("the imported event count differs from the file's",
         std::to_string(imported->events) + " vs " + std::to_string(events));
  }
  std::remove(path.c_str());
  return events;
}

// The three files as one session through ImportChromeJsonFiles.
void ImportAsFiles(std::string_view bytes,
                   const std::optional<uint64_t>& from_memory) {
  const fs::path dir = TempRoot() + ".d";
  const fs::path in = dir / "in", out = dir / "out";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(in);
  const std::string gz = Gzip(bytes);
  const std::vector<std::string> files = {(in / "raw.json").string(),
                                          (in / "wrapped.json.gz").string(),
                                          (in / "cut.json.gz").string()};
  WriteFile(files[0], bytes);
  WriteFile(files[1], gz);
  // Cut inside the deflate data or the trailer, at a place the input picks.
  const size_t cut =
      10 + (bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0])) %
               (gz.size() - 10);
  WriteFile(files[2], std::string_view(gz).substr(0, cut));

  std::map<std::string, std::string> errors;
  ChromeImportOptions options;
  options.on_file_error = [&](const std::string& file, const absl::Status& s) {
    if (s.message().find(file) == std::string::npos) {
      Fail("an import error that does not name its file", s.ToString());
    }
    errors[file] = std::string(s.message());
  };
  auto result = ImportChromeJsonFiles(files, out.string(), options);
  if (!result.ok())
    Fail("the session import failed", result.status().ToString());
  if (result->paths.size() + errors.size() != files.size()) {
    Fail("files neither imported nor reported", std::to_string(errors.size()));
  }
  // Only the imported files are left in the output folder.
  size_t left = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    (void)entry;
    ++left;
  }
  if (left != result->paths.size()) {
    Fail("a failed file left something behind", out.string());
  }
  // The imported files in the order given, with their event counts.
  std::map<std::string, uint64_t> events;
  size_t next = 0;
  for (const std::string& f : files) {
    if (errors.count(f)) continue;
    events[f] = ReadAll(result->paths[next++]);
  }
  // The whole gzip stream imports as the document does from memory; so
  // does the plain file, unless the bytes were gzip themselves.
  auto check_same = [&](const std::string& file) {
    const bool imported = events.count(file) > 0;
    if (imported != from_memory.has_value()) {
      Fail(imported ? "a file imports but the same bytes from memory fail"
                    : "a file fails but the same bytes from memory import",
           imported ? file : errors[file]);
    }
    if (imported && events[file] != *from_memory) {
      Fail("a file imports other events than the same bytes from memory", file);
    }
  };
  check_same(files[1]);
  const bool is_gzip = bytes.size() >= 2 && bytes[0] == '\x1f' &&
                       bytes[1] == static_cast<char>(0x8b);
  if (!is_gzip) check_same(files[0]);
  fs::remove_all(dir, ec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::optional<uint64_t> from_memory = ImportFromMemory(bytes);
  ImportAsFiles(bytes, from_memory);
  return 0;
}
