#ifndef PODSCOPE_RUNTIME_SRC_COLLECTIVES_GLOO_STORE_H_
#define PODSCOPE_RUNTIME_SRC_COLLECTIVES_GLOO_STORE_H_

// Gloo's rendezvous store over the job's job::KeyValueStore, every key under a
// prefix so that several communicators share one store. Gloo reports
// errors by exception: a failed or timed-out lookup throws
// gloo::IoException, which Communicator::Create turns into a Status.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gloo/rendezvous/store.h"
#include "podscope/job/key_value_store.h"

namespace podscope::runtime::internal {

class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(job::KeyValueStore& store, std::string prefix,
            std::chrono::milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override {
    wait(keys, timeout_);
  }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // What get(key) returned, or null.
  const std::vector<char>* Got(const std::string& key) const {
    auto it = got_.find(key);
    return it == got_.end() ? nullptr : &it->second;
  }

 private:
  job::KeyValueStore& store_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  std::map<std::string, std::vector<char>> got_;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_COLLECTIVES_GLOO_STORE_H_
