#include "compiler/buffer_plan.h"

#include <algorithm>
#include <map>

namespace podscope::runtime::internal {
namespace {

constexpr int64_t kAlignment = 64;

int64_t Align(int64_t bytes) {
  return std::max<int64_t>(kAlignment,
                           (bytes + kAlignment - 1) / kAlignment * kAlignment);
}

}  // namespace

BufferPlan PlanBuffers(const std::vector<PlanRequest>& requests) {
  struct Slot {
    int64_t offset;
    int64_t size;
  };
  BufferPlan plan;
  plan.offsets.resize(requests.size(), 0);
  std::vector<Slot> slots;
  std::multimap<int64_t, int> free_by_size;  // size -> slot
  std::multimap<int, int> release_after;     // step -> slot
  for (size_t r = 0; r < requests.size(); ++r) {
    const PlanRequest& request = requests[r];
    plan.unplanned_bytes += Align(request.bytes);
    // Release the slots of values whose last reader ran before this step.
    while (!release_after.empty() &&
           release_after.begin()->first < request.def) {
      const int slot = release_after.begin()->second;
      free_by_size.emplace(slots[slot].size, slot);
      release_after.erase(release_after.begin());
    }
    const int64_t size = Align(request.bytes);
    auto best = free_by_size.lower_bound(size);  // best fit
    int slot;
    if (best != free_by_size.end()) {
      slot = best->second;
      free_by_size.erase(best);
    } else {
      slot = static_cast<int>(slots.size());
      slots.push_back(Slot{plan.arena_bytes, size});
      plan.arena_bytes += size;
    }
    plan.offsets[r] = slots[slot].offset;
    release_after.emplace(request.last_use, slot);
  }
  plan.num_slots = static_cast<int>(slots.size());
  return plan;
}

}  // namespace podscope::runtime::internal
