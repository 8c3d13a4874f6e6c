// A run folder as JAX writes it, built by hand from the XSpace schema:
// LOGDIR/plugins/profile/run1/worker-<h>.xplane.pb for two hosts, with
// nested events, stats by value, by ref_value and on the event metadata,
// an aggregated event (num_occurrences), sub-nanosecond offsets, a device
// plane and a plane without lines. Used by the trace_format, command-line
// and viewer tests, which check the counts worked out below.
//
// Host h (h = 0, 1), hostname "worker-h", base T = kBaseNs + h * 5 ms:
//   "/host:CPU"
//     line 100 "python3", timestamp T: for step s = 0..2 at s * 10 us:
//       train_step   [+0,        9 us]  step_num=s, _r=1, group_id=s
//         PjitFunction [+500.5 ns, 4 us] program_id=42 (uint), flops=1.5e9
//           ExecuteHelper [+1500.5 ns, 2 us] tf_op="jit(train_step)/dot"
//                                            (str), payload=3 bytes
//     line 200 "tf_XLAEigen", timestamp T + 1 us:
//       jit_train_step [+0, 3 us] hlo_module=ref "jit_train_step" (from
//         its metadata), correlation_id=7
//       ThreadpoolListener::Record, num_occurrences=12 (aggregated)
//   "/device:TPU:0", lines at timestamp T + 2 us:
//     1 "XLA Modules": jit_train_step(123) [s * 10 us, 8 us], s = 0..2
//     2 "XLA Ops": fusion.1 [s * 10 us, 3 us], dot.2 [s * 10 us + 3 us,
//        4 us]
//     3 "Steps": "0", "1", "2" [s * 10 us, 9 us]
//   "/host:metadata": no lines.
#ifndef PODSCOPE_TESTS_TRACE_FORMAT_XSPACE_FIXTURES_H_
#define PODSCOPE_TESTS_TRACE_FORMAT_XSPACE_FIXTURES_H_

#include <cstdint>
#include <filesystem>
#include <vector>

#include "podscope/trace_format/xplane.pb.h"

namespace podscope::trace_format::testing {

struct JaxRun {
  static constexpr int64_t kBaseNs = 1'700'000'000'000'000'000;
  static constexpr int64_t kHostSkewNs = 5'000'000;
  static constexpr uint64_t kEventsPerHost = 9 + 2 + 3 + 6 + 3;  // 23
  static constexpr uint64_t kTracksPerHost = 5;
  static constexpr uint64_t kSlicesPerHost = kEventsPerHost - 1;  // 22
  std::filesystem::path logdir;
  std::filesystem::path run_dir;
  std::vector<std::filesystem::path> files;  // worker-0, worker-1
};

tensorflow::profiler::XSpace JaxLikeXSpace(int host);

// Writes both hosts' files under `logdir`.
JaxRun WriteJaxRun(const std::filesystem::path& logdir);

}  // namespace podscope::trace_format::testing

#endif  // PODSCOPE_TESTS_TRACE_FORMAT_XSPACE_FIXTURES_H_
