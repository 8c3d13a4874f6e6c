// ParallelLoader: loader threads produce and transfer batches ahead of the
// consumer, bounded by the prefetch depth (see loader.h).

#include "podscope/runtime/loader.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/trace.h"

namespace podscope::runtime {

struct ParallelLoader::State {
  Client* client = nullptr;
  std::vector<Device*> devices;
  Producer produce;
  LoaderOptions options;

  std::mutex mu;
  std::condition_variable changed;
  int64_t next_to_start = 0;   // guarded by mu
  int64_t next_to_return = 0;  // guarded by mu
  int64_t end = INT64_MAX;     // the first index past the data; guarded
  bool closed = false;         // guarded by mu
  std::map<int64_t, absl::StatusOr<DeviceBatch>> ready;  // guarded by mu
  std::vector<std::thread> threads;

  void Work(int thread_index) {
    profiler::SetThreadName(absl::StrCat("loader ", thread_index));
    while (true) {
      int64_t index;
      {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock, [&] {
          return closed || next_to_start >= end ||
                 next_to_start < next_to_return + options.prefetch;
        });
        if (closed || next_to_start >= end) return;
        index = next_to_start++;
      }
      absl::StatusOr<DeviceBatch> batch = Prepare(index);
      std::lock_guard<std::mutex> lock(mu);
      if (!batch.ok() && index < end) end = index + 1;  // deliver the error
      if (absl::IsOutOfRange(batch.status())) end = std::min(end, index);
      ready.emplace(index, std::move(batch));
      changed.notify_all();
    }
  }

  absl::StatusOr<DeviceBatch> Prepare(int64_t index) {
    PODSCOPE_TRACE("loader_prepare", "batch", index);
    PODSCOPE_ASSIGN_OR_RETURN(Batch host, produce(index));
    if (host.size() != devices.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ParallelLoader: batch ", index, " has arrays for ",
                       host.size(), " devices, not ", devices.size()));
    }
    DeviceBatch out(devices.size());
    for (size_t d = 0; d < devices.size(); ++d) {
      for (Literal& literal : host[d]) {
        PODSCOPE_ASSIGN_OR_RETURN(
            BufferPtr buffer,
            client->BufferFromLiteral(std::move(literal), devices[d]));
        out[d].push_back(std::move(buffer));
      }
    }
    return out;
  }
};

ParallelLoader::ParallelLoader(std::shared_ptr<State> state)
    : state_(std::move(state)) {}

absl::StatusOr<std::unique_ptr<ParallelLoader>> ParallelLoader::Create(
    Client* client, absl::Span<Device* const> devices, Producer produce,
    const LoaderOptions& options) {
  if (client == nullptr || devices.empty() || !produce) {
    return absl::InvalidArgumentError(
        "ParallelLoader: needs a client, devices and a producer");
  }
  if (options.prefetch < 1 || options.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ParallelLoader: prefetch (", options.prefetch,
                     ") and threads (", options.threads, ") must be >= 1"));
  }
  auto state = std::make_shared<State>();
  state->client = client;
  state->devices.assign(devices.begin(), devices.end());
  state->produce = std::move(produce);
  state->options = options;
  for (int t = 0; t < options.threads; ++t) {
    state->threads.emplace_back([s = state.get(), t] { s->Work(t); });
  }
  return std::unique_ptr<ParallelLoader>(new ParallelLoader(std::move(state)));
}

ParallelLoader::~ParallelLoader() { Close(); }

absl::StatusOr<ParallelLoader::DeviceBatch> ParallelLoader::Next() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  PODSCOPE_TRACE("loader_wait");
  s.changed.wait(lock, [&] {
    return s.closed || s.ready.contains(s.next_to_return) ||
           s.next_to_return >= s.end;
  });
  if (s.closed) return absl::CancelledError("ParallelLoader: closed");
  auto it = s.ready.find(s.next_to_return);
  if (it == s.ready.end()) {
    return absl::OutOfRangeError("ParallelLoader: no more batches");
  }
  absl::StatusOr<DeviceBatch> batch = std::move(it->second);
  s.ready.erase(it);
  if (!batch.ok()) {
    s.end = s.next_to_return;  // nothing after an error or the end
    return batch.status();
  }
  ++s.next_to_return;
  s.changed.notify_all();
  return batch;
}

void ParallelLoader::Close() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.closed = true;
    s.changed.notify_all();
  }
  for (std::thread& t : s.threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace podscope::runtime
