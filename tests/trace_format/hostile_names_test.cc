// Host and session names read from a file become file names only through
// base::SafeFileComponent: the XSpace export and import write inside their
// folder whatever a trace calls its host, never through a link planted at
// a name, and never over a file already there.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "podscope/trace_format/import.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"
#include "podscope/trace_format/xspace.h"
#include "test_util.h"

namespace podscope::trace_format::testing {
namespace {

namespace fs = std::filesystem;

fs::path FreshDir(const std::string& name) {
  std::random_device rd;
  const fs::path dir =
      fs::path(::testing::TempDir()) /
      absl::StrCat("hostile_names_", name, "_", getpid(), "_", rd());
  fs::create_directories(dir);
  return dir;
}

// A small trace in memory whose metadata names `host` and `session`.
std::unique_ptr<TraceReader> TraceOf(const std::string& host,
                                     const std::string& session,
                                     std::string* data) {
  auto w = NewWriter(data);
  if (w == nullptr) return nullptr;
  proto::Metadata m;
  m.set_host(host);
  m.set_pid(7);
  m.set_session_id(session);
  w->SetMetadata(m);
  const uint32_t track = ThreadTrack(*w, "main");
  w->AddSlice(track, 1'000, 500, w->InternString("work"));
  if (!w->Close().ok()) return nullptr;
  auto reader = TraceReader::OpenBuffer(*data, "mem");
  return reader.ok() ? *std::move(reader) : nullptr;
}

std::set<std::string> EverythingUnder(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_directory()) out.insert(fs::relative(e.path(), root).string());
  }
  return out;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(HostileNames, XSpaceExportWritesInsideItsFolder) {
  const fs::path root = FreshDir("export");
  const fs::path logdir = root / "logdir";
  std::string a_data, b_data;
  auto a = TraceOf("../../../evil", "../../sess", &a_data);
  auto b = TraceOf((root / "abs").string(), "../../sess", &b_data);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const TraceReader* readers[] = {a.get(), b.get()};
  auto stats = ExportXSpace(readers, logdir.string(), "");
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->files.size(), 2u);
  const fs::path folder = logdir / "plugins" / "profile" / "_.._.._sess";
  for (const std::string& f : stats->files) {
    EXPECT_EQ(fs::path(f).parent_path(), folder) << f;
  }
  for (const std::string& f : EverythingUnder(root)) {
    EXPECT_TRUE(f.starts_with("logdir/plugins/profile/_.._.._sess/"))
        << f << " is outside the export's folder";
  }
}

TEST(HostileNames, XSpaceExportNeverWritesThroughALinkOrOverAFile) {
  const fs::path root = FreshDir("export-link");
  const fs::path folder = root / "plugins" / "profile" / "s";
  fs::create_directories(folder);
  const fs::path victim = root / "victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, folder / "h.xplane.pb");
  std::string data;
  auto reader = TraceOf("h", "s", &data);
  ASSERT_NE(reader, nullptr);
  const TraceReader* readers[] = {reader.get()};
  for (int i = 0; i < 2; ++i) {
    auto stats = ExportXSpace(readers, root.string(), "s");
    ASSERT_TRUE(stats.ok()) << stats.status();
    ASSERT_EQ(stats->files.size(), 1u);
    EXPECT_EQ(fs::path(stats->files[0]).filename(),
              absl::StrCat("h.", i + 1, ".xplane.pb"));
  }
  EXPECT_EQ(ReadAll(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(folder / "h.xplane.pb"));
}

TEST(HostileNames, XSpaceImportWritesInsideItsFolder) {
  const fs::path root = FreshDir("import");
  std::string data;
  auto reader = TraceOf("../../../evil", "s", &data);
  ASSERT_NE(reader, nullptr);
  const TraceReader* readers[] = {reader.get()};
  auto exported = ExportXSpace(readers, (root / "in").string(), "s");
  ASSERT_TRUE(exported.ok()) << exported.status();
  const fs::path out = root / "out" / "run";
  for (int i = 0; i < 2; ++i) {
    auto written = ImportXSpace(exported->files, out.string(), {});
    ASSERT_TRUE(written.ok()) << written.status();
    ASSERT_EQ(written->size(), 1u);
    EXPECT_EQ(fs::path((*written)[0]).parent_path(), out);
    EXPECT_TRUE(TraceReader::Open((*written)[0]).ok());
  }
  std::set<std::string> expected = {
      "out/run/_.._.._.._evil.7.podtrace",
      "out/run/_.._.._.._evil.7.1.podtrace",
      fs::relative(exported->files[0], root).string()};
  EXPECT_EQ(EverythingUnder(root), expected);
}

}  // namespace
}  // namespace podscope::trace_format::testing
