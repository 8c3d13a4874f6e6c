#ifndef PODSCOPE_RUNTIME_SRC_COMPILER_BUFFER_PLAN_H_
#define PODSCOPE_RUNTIME_SRC_COMPILER_BUFFER_PLAN_H_

#include <cstdint>
#include <vector>

namespace podscope::runtime::internal {

// One intermediate value to place: produced by step `def`, last read by
// step `last_use` (>= def).
struct PlanRequest {
  int64_t bytes = 0;
  int def = 0;
  int last_use = 0;
};

struct BufferPlan {
  std::vector<int64_t> offsets;  // per request, into one arena
  int64_t arena_bytes = 0;
  int num_slots = 0;
  int64_t unplanned_bytes = 0;  // the arena size if nothing were reused
};

// Places the values so that two values share memory only when one is dead
// before the other is produced. A value's memory is released only after the
// step that last reads it has produced its own result, so a kernel's output
// never aliases its inputs. Requests must be ordered by `def`.
BufferPlan PlanBuffers(const std::vector<PlanRequest>& requests);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_COMPILER_BUFFER_PLAN_H_
