#include "import_path.h"

#include <cstdio>

#include "podscope/trace_format/import.h"
#include "text_format.h"

namespace podscope::tools {

absl::StatusOr<std::string> ResolveInput(const std::string& path,
                                         std::string_view command,
                                         const CommandIo& io) {
  ProgressLine progress(io, "importing", "files");
  trace_format::ImportOptions options;
  options.progress = [&](size_t done, size_t total) {
    progress.Update(done, total);
  };
  const std::string prefix = "podscope " + std::string(command);
  options.on_file_error = [&](const std::string& file,
                              const absl::Status& error) {
    progress.Finish();
    std::fprintf(io.err, "%s: warning: skipping %s: %s\n", prefix.c_str(),
                 file.c_str(),
                 WithoutPathPrefix(std::string(error.message()), file).c_str());
  };
  auto resolved = trace_format::ResolveTracePath(path, options);
  progress.Finish();
  return resolved;
}

}  // namespace podscope::tools
