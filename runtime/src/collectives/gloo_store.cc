#include "collectives/gloo_store.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gloo/common/error.h"

namespace podscope::runtime::internal {
namespace {

[[noreturn]] void Throw(const absl::Status& status) {
  throw ::gloo::IoException(std::string(status.ToString()));
}

}  // namespace

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  absl::Status s = store_.Set(absl::StrCat(prefix_, key),
                              std::string_view(data.data(), data.size()));
  if (!s.ok()) Throw(s);
}

std::vector<char> GlooStore::get(const std::string& key) {
  absl::StatusOr<std::string> value = store_.BlockingGet(
      absl::StrCat(prefix_, key), absl::FromChrono(timeout_));
  if (!value.ok()) Throw(value.status());
  std::vector<char> data(value->begin(), value->end());
  got_[key] = data;
  return data;
}

void GlooStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  for (const std::string& key : keys) {
    absl::StatusOr<std::string> value = store_.BlockingGet(
        absl::StrCat(prefix_, key),
        std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (!value.ok()) Throw(value.status());
  }
}

}  // namespace podscope::runtime::internal
