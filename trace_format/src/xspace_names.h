// Names Podscope's XSpace writer and reader agree on: XProf's plane, line
// and stat names, and the stats that carry what XSpace cannot say.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_XSPACE_NAMES_H_
#define PODSCOPE_TRACE_FORMAT_SRC_XSPACE_NAMES_H_

#include <cstdint>
#include <string_view>

namespace podscope::trace_format {

// XProf's conventions.
inline constexpr std::string_view kHostPlaneName = "/host:CPU";
inline constexpr std::string_view kDevicePlanePrefix = "/device:";
// XProf's trace viewer shows device planes of these kinds only (GPU planes,
// else TPU planes, else custom ones); any other device is a custom plane
// whose real kind is the plane stat kDeviceTypeStat.
inline constexpr std::string_view kGpuKind = "GPU";
inline constexpr std::string_view kTpuKind = "TPU";
inline constexpr std::string_view kCustomKind = "CUSTOM";
inline constexpr std::string_view kDeviceTypeStat = "device_type_string";
inline constexpr std::string_view kStepsLineName = "Steps";
inline constexpr std::string_view kStepNumStat = "step_num";
inline constexpr std::string_view kRootStat = "_r";
inline constexpr std::string_view kGroupIdStat = "group_id";

// Podscope's own: skipped as arguments on import.
inline constexpr std::string_view kInternalStatPrefix = "podscope.";
inline constexpr std::string_view kPlaneInfoStat = "podscope.plane_info";
inline constexpr std::string_view kInstantStat = "podscope.instant";
inline constexpr std::string_view kFlowsStat = "podscope.flows";
inline constexpr std::string_view kStackStat = "podscope.stack";
// A counter sample's value.
inline constexpr std::string_view kCounterValueStat = "value";
// The description of stats the writer derived for XProf (steps), which an
// import of a Podscope-written XSpace leaves out.
inline constexpr std::string_view kDerivedDescription =
    "derived by podscope for XProf";

// Line ids of lines that are not tracks (track lines take the track's id,
// a uint32). XProf finds a device plane's step markers on the line whose id
// is its kThreadIdStepInfo, the C++ int 0xdeadbeef: stored sign-extended in
// XLine.id, so -559038737. Files Podscope wrote before used 1 << 40.
inline constexpr int64_t kStepsLineId = static_cast<int32_t>(0xdeadbeefu);
inline constexpr int64_t kLegacyStepsLineId = int64_t{1} << 40;
inline constexpr int64_t kSamplesLineIdOffset = int64_t{1} << 32;

// A line of step markers: XProf's id (also read unsigned, as writers
// outside C++ may store it) or the id of earlier Podscope files.
inline bool IsStepsLineId(int64_t id) {
  return id == kStepsLineId || id == int64_t{0xdeadbeef} ||
         id == kLegacyStepsLineId;
}

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_XSPACE_NAMES_H_
