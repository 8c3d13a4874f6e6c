#ifndef PODSCOPE_RUNTIME_SRC_MACHINE_PEAK_H_
#define PODSCOPE_RUNTIME_SRC_MACHINE_PEAK_H_

// The machine's peak rates, which rooflines compare kernels against: the
// f32 GEMM rate of the client's intra-op pool (Eigen contraction on all its
// threads) and the memory bandwidth of a streaming triad. Measured once per
// host and thread count (< 0.5 s) and cached in
// $XDG_CACHE_HOME/podscope/machine-peak (else ~/.cache/podscope/...), one
// line per "<cpu model> threads=<n>" key; later processes read the cache.
// RecordMachinePeak puts them in the trace metadata's attributes:
// machine.peak_gflops, machine.peak_gbps, machine.peak_threads and
// machine.peak_source ("measured" or "cached").

#include <string>

#include "absl/status/statusor.h"
#include "parallel.h"

namespace podscope::runtime::internal {

struct MachinePeak {
  double gflops = 0;
  double gbps = 0;
  int threads = 0;
  bool cached = false;
};

// The cache file's path ("" when neither XDG_CACHE_HOME nor HOME is set).
std::string MachinePeakCachePath();

// Reads this host's entry for `pool`'s thread count from the cache, or
// measures it and adds it to the cache (a cache that cannot be written is
// not an error: the peak is measured again next time).
MachinePeak LoadOrMeasureMachinePeak(const IntraOpPool& pool);

// Once per process: LoadOrMeasureMachinePeak and the metadata attributes.
void RecordMachinePeak(const IntraOpPool& pool);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_MACHINE_PEAK_H_
