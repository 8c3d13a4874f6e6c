// The alignment of hosts that carry their own clocks lives with the trace
// format (podscope/trace_format/host_alignment.h), where imports use it
// too; the capture client names it here.
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_HOST_ALIGNMENT_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_HOST_ALIGNMENT_H_

#include "podscope/trace_format/host_alignment.h"

namespace podscope::profiler::internal {

using trace_format::AlignHosts;
using trace_format::AlignInput;
using trace_format::AlignMethod;
using trace_format::AlignMethodName;
using trace_format::AlignOptions;
using trace_format::HostAlignment;
using trace_format::ParseAlignMethod;

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_HOST_ALIGNMENT_H_
