#ifndef PODSCOPE_RUNTIME_SRC_METRICS_INTERNAL_H_
#define PODSCOPE_RUNTIME_SRC_METRICS_INTERNAL_H_

#include <cstdint>
#include <string_view>

namespace podscope::runtime::internal {

inline constexpr std::string_view kCompileTime = "CompileTime";
inline constexpr std::string_view kExecuteTime = "ExecuteTime";
inline constexpr std::string_view kTransferToDeviceTime =
    "TransferToDeviceTime";
inline constexpr std::string_view kTransferFromDeviceTime =
    "TransferFromDeviceTime";
inline constexpr std::string_view kCachedCompile = "CachedCompile";
inline constexpr std::string_view kUncachedCompile = "UncachedCompile";
inline constexpr std::string_view kStepCount = "StepCount";

void RecordTime(std::string_view metric, int64_t ns);
void IncrementCounter(std::string_view counter, int64_t delta = 1);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_METRICS_INTERNAL_H_
