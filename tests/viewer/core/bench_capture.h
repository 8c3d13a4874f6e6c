// The benchmark capture of viewer/core and viewer/app: 16 host files of
// training-like nested slices (step > 8 layers > 4 ops > 2 kernels on 4
// threads each), with clock offsets, generated once and cached in
// $TMPDIR/podscope_viewer_bench_<events>.
#ifndef PODSCOPE_TESTS_VIEWER_CORE_BENCH_CAPTURE_H_
#define PODSCOPE_TESTS_VIEWER_CORE_BENCH_CAPTURE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace podscope::viewer::testing {

// The session folder holding a capture of about `events` events, written
// first if the cache does not hold it (exits the process if it cannot be
// written).
std::string EnsureBenchCapture(uint64_t events);

// The same shape over `files` hosts (about events / files each), cached in
// $TMPDIR/<name>.
std::string EnsureHostsCapture(int files, uint64_t events,
                               const std::string& name);

// This process's resident memory (RSS), in bytes.
size_t ResidentBytes();

}  // namespace podscope::viewer::testing

#endif  // PODSCOPE_TESTS_VIEWER_CORE_BENCH_CAPTURE_H_
