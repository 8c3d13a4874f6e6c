#ifndef PODSCOPE_PROFILER_SRC_SERVER_SERVER_INTERNAL_H_
#define PODSCOPE_PROFILER_SRC_SERVER_SERVER_INTERNAL_H_

#include "podscope/profiler/profiler_service.pb.h"

namespace podscope::profiler::internal {

// What GetInfo answers about this process (without the capture state).
void FillProcessInfo(proto::ProcessInfo* info);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SERVER_SERVER_INTERNAL_H_
