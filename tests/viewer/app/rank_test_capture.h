// A job's session for the viewer/app tests, shaped like a `podscope launch`
// of train_mnist: N ranks on one host, each a process with a main thread
// of `train_step` slices (with forward / backward / optimizer_step inside)
// that launch kernels on a device stream through flows, a data loader
// thread, and three counters. Each rank's step k starts at a known time,
// and its window (podscope analyze's) ends where the last kernel it
// launched ends.
#ifndef PODSCOPE_TESTS_VIEWER_APP_RANK_TEST_CAPTURE_H_
#define PODSCOPE_TESTS_VIEWER_APP_RANK_TEST_CAPTURE_H_

#include <cstdint>
#include <string>

namespace podscope::viewer::testing {

inline constexpr int64_t kRankStepPeriod = 20'000'000;  // 20 ms
inline constexpr int64_t kRankStepSlice = 12'000'000;   // the host slice
// The last kernel a step launches runs past its host slice: the step's
// window ends at start + kRankStepWindow.
inline constexpr int64_t kRankStepWindow = 16'000'000;

// The start of rank r's step k on the session's clock (every rank's clock
// is the reference).
inline int64_t RankStepStart(int rank, int step) {
  return 1'000'000 + step * kRankStepPeriod + rank * 100'000;
}

// Writes `ranks` files vm.<200+r>.podtrace into a new session folder under
// `dir` and returns its path.
std::string WriteRankSession(const std::string& dir, int ranks, int steps);

}  // namespace podscope::viewer::testing

#endif  // PODSCOPE_TESTS_VIEWER_APP_RANK_TEST_CAPTURE_H_
