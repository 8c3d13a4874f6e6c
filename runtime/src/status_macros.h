#ifndef PODSCOPE_RUNTIME_SRC_STATUS_MACROS_H_
#define PODSCOPE_RUNTIME_SRC_STATUS_MACROS_H_

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

#endif  // PODSCOPE_RUNTIME_SRC_STATUS_MACROS_H_
