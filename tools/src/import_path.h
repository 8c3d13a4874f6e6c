// The import hook of the commands that read traces: a PATH holding
// foreign traces (XSpace, Chrome trace JSON) is imported into the cache
// with a progress line, and the command reads the podtrace files that come
// out (trace_format/import.h).
#ifndef PODSCOPE_TOOLS_IMPORT_PATH_H_
#define PODSCOPE_TOOLS_IMPORT_PATH_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "command.h"

namespace podscope::tools {

// `path` itself when it holds podtrace files (or does not exist), else the
// cache folder of its import. Inputs that could not be imported beside
// others are printed as "podscope COMMAND: warning: ..." on stderr.
absl::StatusOr<std::string> ResolveInput(const std::string& path,
                                         std::string_view command,
                                         const CommandIo& io);

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_IMPORT_PATH_H_
