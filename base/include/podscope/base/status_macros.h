#ifndef PODSCOPE_BASE_STATUS_MACROS_H_
#define PODSCOPE_BASE_STATUS_MACROS_H_

// Early returns on an error status, for every module:
//   PODSCOPE_RETURN_IF_ERROR(WriteHeader(file));
//   PODSCOPE_ASSIGN_OR_RETURN(auto reader, TraceReader::Open(path));
// The second declares (or assigns) lhs from a StatusOr's value and returns
// its status when it holds none.

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PODSCOPE_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::absl::Status _podscope_status = (expr);            \
    if (!_podscope_status.ok()) return _podscope_status; \
  } while (0)

#define PODSCOPE_STATUS_CONCAT_INNER(a, b) a##b
#define PODSCOPE_STATUS_CONCAT(a, b) PODSCOPE_STATUS_CONCAT_INNER(a, b)

#define PODSCOPE_ASSIGN_OR_RETURN(lhs, rexpr) \
  PODSCOPE_ASSIGN_OR_RETURN_IMPL(             \
      PODSCOPE_STATUS_CONCAT(_podscope_statusor_, __LINE__), lhs, rexpr)

#define PODSCOPE_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return statusor.status();              \
  lhs = std::move(statusor).value()

#endif  // PODSCOPE_BASE_STATUS_MACROS_H_
