// Who may write which key of a job's store (keys.h): the reserved
// prefixes "launch/" and "podscope/" hold one entry per rank, written only
// by that rank, and a few entries of rank 0's.
#ifndef PODSCOPE_JOB_SRC_KEY_RULES_H_
#define PODSCOPE_JOB_SRC_KEY_RULES_H_

#include <string_view>

#include "absl/status/status.h"

namespace podscope::job::internal {

// OK when `rank` may set or delete `key`; PERMISSION_DENIED naming the
// key and the rule otherwise.
absl::Status CheckKeyWriter(int rank, std::string_view key);

}  // namespace podscope::job::internal

#endif  // PODSCOPE_JOB_SRC_KEY_RULES_H_
