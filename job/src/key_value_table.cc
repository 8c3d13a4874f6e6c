// The coordinator's key-value store within its limits (key_value_table.h).

#include "src/key_value_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace podscope::job::internal {
namespace {

// A directory answer holds at most this many entries and bytes; the client
// asks for the rest page by page.
constexpr size_t kDirectoryPageEntries = 4096;
constexpr size_t kDirectoryPageBytes = size_t{4} << 20;

}  // namespace

absl::Status KeyValueTable::Set(const std::string& key,
                                const std::string& value) {
  if (value.size() > limits_.max_value_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("value of key '", key, "' is ", value.size(),
                     " bytes; the store's limit is ", limits_.max_value_bytes,
                     " bytes a value"));
  }
  auto it = kv_.find(key);
  const size_t old_bytes =
      it == kv_.end() ? 0 : it->first.size() + it->second.size();
  const size_t new_bytes = key.size() + value.size();
  if (it == kv_.end() && kv_.size() >= limits_.max_keys) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the job's store holds ", kv_.size(),
                     " keys, its limit; key '", key, "' was not set"));
  }
  if (bytes_ - old_bytes + new_bytes > limits_.max_total_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("setting key '", key, "' would make the job's store ",
                     bytes_ - old_bytes + new_bytes, " bytes; its limit is ",
                     limits_.max_total_bytes, " bytes"));
  }
  bytes_ = bytes_ - old_bytes + new_bytes;
  kv_[key] = value;
  return absl::OkStatus();
}

const std::string* KeyValueTable::Find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

void KeyValueTable::Delete(const std::string& key) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return;
  bytes_ -= it->first.size() + it->second.size();
  kv_.erase(it);
}

void KeyValueTable::Page(const std::string& prefix,
                         const std::string& page_after, int page_size,
                         coordination::KeyDirectoryResponse* out) const {
  const size_t max_entries =
      page_size > 0 ? std::min<size_t>(page_size, kDirectoryPageEntries)
                    : kDirectoryPageEntries;
  auto it = page_after.empty() ? kv_.lower_bound(prefix)
                               : kv_.upper_bound(page_after);
  if (it != kv_.end() && it->first < prefix) it = kv_.lower_bound(prefix);
  size_t bytes = 0;
  for (; it != kv_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it) {
    const size_t entry = it->first.size() + it->second.size();
    if (out->entries_size() > 0 &&
        (static_cast<size_t>(out->entries_size()) >= max_entries ||
         bytes + entry > kDirectoryPageBytes)) {
      out->set_more(true);
      break;
    }
    coordination::KeyValue* kv = out->add_entries();
    kv->set_key(it->first);
    kv->set_value(it->second);
    bytes += entry;
  }
}

}  // namespace podscope::job::internal
