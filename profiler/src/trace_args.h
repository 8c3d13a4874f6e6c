// An argument as stored between recording and writing.
#ifndef PODSCOPE_PROFILER_SRC_TRACE_ARGS_H_
#define PODSCOPE_PROFILER_SRC_TRACE_ARGS_H_

#include <cstdint>

namespace podscope::profiler::internal {

struct StoredArg {
  uint32_t key;   // StringRegistry id
  uint8_t kind;   // kRecordArgInt / kRecordArgDouble / kRecordArgString
  uint64_t bits;  // int64, double bits, or StringRegistry id
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_TRACE_ARGS_H_
