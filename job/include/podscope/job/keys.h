// The keys and barrier names of a job's key-value store that Podscope
// itself uses. Two prefixes are reserved: "launch/" (the launchers'
// rendezvous) and "podscope/" (what the ranks publish for each other and
// for `podscope capture --job`). A program's own keys live elsewhere.
#ifndef PODSCOPE_JOB_KEYS_H_
#define PODSCOPE_JOB_KEYS_H_

#include <string_view>

namespace podscope::job {

inline constexpr std::string_view kLaunchKeyPrefix = "launch/";
inline constexpr std::string_view kPodscopeKeyPrefix = "podscope/";

// The launchers' rendezvous (job/src/launch.cc): each node's process
// count, the job's MASTER_PORT chosen by node 0, and the barrier after
// which every node reads them.
inline constexpr std::string_view kLaunchNprocKeyPrefix = "launch/nproc/";
inline constexpr std::string_view kLaunchMasterPortKey = "launch/master_port";
inline constexpr std::string_view kLaunchReadyBarrier = "launch/ready";

// What Job::Init publishes per rank (kProfilerKeyPrefix + rank: "address
// host pid"; kDevicesKeyPrefix + rank: the rank's devices), the clock
// probe target, and the runtime's barriers.
inline constexpr std::string_view kProfilerKeyPrefix = "podscope/profiler/";
inline constexpr std::string_view kDevicesKeyPrefix = "podscope/devices/";
inline constexpr std::string_view kClockProbeKey = "podscope/clock_probe";
inline constexpr std::string_view kInitBarrier = "podscope/init";
inline constexpr std::string_view kShutdownBarrier = "podscope/shutdown";

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_KEYS_H_
