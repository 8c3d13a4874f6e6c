#ifndef PODSCOPE_RUNTIME_FILE_STORE_H_
#define PODSCOPE_RUNTIME_FILE_STORE_H_

// A job::KeyValueStore kept in a folder that every process of a job can read
// and write (a shared /tmp on one host, or a network file system), like
// PyTorch's FileStore: the bootstrap for single-host jobs and tests that run
// without a coordinator.
//
// Contract (besides job::KeyValueStore's):
// - One file per key under `dir`, named by the key's hex encoding; Set
//   writes a temporary file and renames it into place, so a reader sees
//   either the old value or the new one, never a partial one.
// - BlockingGet polls (every 1..20 ms, backing off) until the key exists.
// - Keys are at most 120 bytes (a file name each).
// - Processes of different jobs must use different folders (or prefixes).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "podscope/job/key_value_store.h"

namespace podscope::runtime {

// Opens (creating if missing) the store in `dir`. InvalidArgument for an
// empty path; the error of mkdir when the folder cannot be made.
absl::StatusOr<std::unique_ptr<job::KeyValueStore>> OpenFileStore(
    const std::string& dir);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_FILE_STORE_H_
