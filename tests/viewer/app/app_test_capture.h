// A small multi-host capture for the viewer/app tests: three hosts, each
// with a thread of random nested slices, a device stream whose kernels are
// launched by host slices through flows, a memory counter and CPU stack
// samples, plus a "landmark" slice with arguments alone on its own track
// (easy to find on screen).
#ifndef PODSCOPE_TESTS_VIEWER_APP_APP_TEST_CAPTURE_H_
#define PODSCOPE_TESTS_VIEWER_APP_APP_TEST_CAPTURE_H_

#include <cstdint>
#include <string>

namespace podscope::viewer::testing {

inline constexpr int kCaptureHosts = 3;
// The landmark's time on hostA's own clock, and hostA's clock offset.
inline constexpr int64_t kLandmarkStart = 400'000'000;
inline constexpr int64_t kLandmarkDuration = 150'000'000;

// Writes the capture's session folder under `dir` and returns its path;
// files are named host<X>.<pid>.podtrace.
std::string WriteAppTestCapture(const std::string& dir);

// Writes one host's file (hosts 0..kCaptureHosts-1) to `path`.
void WriteAppTestHost(const std::string& path, int host);

}  // namespace podscope::viewer::testing

#endif  // PODSCOPE_TESTS_VIEWER_APP_APP_TEST_CAPTURE_H_
