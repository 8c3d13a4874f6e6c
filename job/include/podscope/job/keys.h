// The keys and barrier names of a job's key-value store that Podscope
// itself uses. Two prefixes are reserved: "launch/" (the launchers'
// rendezvous) and "podscope/" (what the ranks publish for each other and
// for `podscope capture --job`). A program's own keys live elsewhere.
#ifndef PODSCOPE_JOB_KEYS_H_
#define PODSCOPE_JOB_KEYS_H_

namespace podscope::job {

inline constexpr char kLaunchKeyPrefix[] = "launch/";
inline constexpr char kPodscopeKeyPrefix[] = "podscope/";

// The launchers' rendezvous (job/src/launch.cc): each node's process
// count, the job's MASTER_PORT chosen by node 0, and the barrier after
// which every node reads them.
inline constexpr char kLaunchNprocKeyPrefix[] = "launch/nproc/";
inline constexpr char kLaunchMasterPortKey[] = "launch/master_port";
inline constexpr char kLaunchReadyBarrier[] = "launch/ready";

// What Job::Init publishes per rank (kProfilerKeyPrefix + rank: "address
// host pid"; kDevicesKeyPrefix + rank: the rank's devices), the clock
// probe target, and the runtime's barriers.
inline constexpr char kProfilerKeyPrefix[] = "podscope/profiler/";
inline constexpr char kDevicesKeyPrefix[] = "podscope/devices/";
inline constexpr char kClockProbeKey[] = "podscope/clock_probe";
inline constexpr char kInitBarrier[] = "podscope/init";
inline constexpr char kShutdownBarrier[] = "podscope/shutdown";

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_KEYS_H_
