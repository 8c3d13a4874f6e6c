// The trace files of one session folder.
//
// Contract: ListTraceFiles(dir) is every regular file directly inside
// `dir` whose name ends in kFileExtension (format.h), sorted by path; a
// folder that does not exist or cannot be read has none. Sub-folders are
// not searched (OpenTraces searches a whole tree).
#ifndef PODSCOPE_TRACE_FORMAT_TRACE_FILES_H_
#define PODSCOPE_TRACE_FORMAT_TRACE_FILES_H_

#include <string>
#include <vector>

namespace podscope::trace_format {

std::vector<std::string> ListTraceFiles(const std::string& dir);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_TRACE_FILES_H_
