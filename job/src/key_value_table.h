#ifndef PODSCOPE_JOB_SRC_KEY_VALUE_TABLE_H_
#define PODSCOPE_JOB_SRC_KEY_VALUE_TABLE_H_

// The coordinator's key-value store itself: the keys and values within the
// job's StoreLimits, and its directory pages. Not thread-safe: the
// coordinator holds its lock around every call.

#include <cstddef>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "podscope/job/coordination.h"
#include "podscope/job/coordination_service.pb.h"

namespace podscope::job::internal {

class KeyValueTable {
 public:
  explicit KeyValueTable(const StoreLimits& limits) : limits_(limits) {}

  // RESOURCE_EXHAUSTED naming the limit a value, the keys or the bytes
  // would pass (the key's own size is the caller's to check).
  absl::Status Set(const std::string& key, const std::string& value);
  // nullptr when missing.
  const std::string* Find(const std::string& key) const;
  void Delete(const std::string& key);
  // The keys under `prefix` after `page_after` (empty: from the start), at
  // most `page_size` (0: the page's limit) of them and 4 MiB; `more` when
  // others follow.
  void Page(const std::string& prefix, const std::string& page_after,
            int page_size, coordination::KeyDirectoryResponse* out) const;

 private:
  const StoreLimits limits_;
  std::map<std::string, std::string> kv_;
  size_t bytes_ = 0;  // keys and values in kv_
};

}  // namespace podscope::job::internal

#endif  // PODSCOPE_JOB_SRC_KEY_VALUE_TABLE_H_
