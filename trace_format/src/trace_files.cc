#include "podscope/trace_format/trace_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "podscope/trace_format/format.h"

namespace podscope::trace_format {

std::vector<std::string> ListTraceFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) &&
        it->path().extension() == kFileExtension) {
      files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace podscope::trace_format
