#ifndef PODSCOPE_JOB_KEY_VALUE_STORE_H_
#define PODSCOPE_JOB_KEY_VALUE_STORE_H_

// The key-value store every process of a job shares. The coordination
// service (hosted by rank 0) implements it over gRPC; collectives bootstrap
// through it (Gloo's rendezvous store is backed by it), and the launcher and
// the profiler register what other ranks must find (addresses, ports).
//
// Contract:
// - Keys are arbitrary byte strings; '/' separates directories for
//   GetDirectory. Values are arbitrary bytes.
// - Set overwrites. Get of a missing key is NOT_FOUND.
// - BlockingGet waits until the key exists or `timeout` passes
//   (DEADLINE_EXCEEDED naming the key); a job that is shutting down, or a
//   peer found dead while waiting, ends the wait with an error saying so.
// - Every call is thread-safe.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace podscope::job {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;

  virtual absl::Status Set(std::string_view key, std::string_view value) = 0;
  virtual absl::StatusOr<std::string> Get(std::string_view key) = 0;
  virtual absl::StatusOr<std::string> BlockingGet(std::string_view key,
                                                  absl::Duration timeout) = 0;
  // Every (key, value) whose key starts with `prefix`, sorted by key.
  virtual absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
  GetDirectory(std::string_view prefix) = 0;
  // Deleting a missing key is not an error.
  virtual absl::Status Delete(std::string_view key) = 0;
};

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_KEY_VALUE_STORE_H_
