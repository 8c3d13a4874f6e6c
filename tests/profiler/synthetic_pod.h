// A synthetic pod for the host alignment (src/capture/host_alignment.h):
// hosts whose wall clocks are off by known amounts, a Profile call to each
// with known network delays, and collectives whose ends are jittered
// around common instants. Shared by the alignment test and its benchmark.
#ifndef PODSCOPE_TESTS_PROFILER_SYNTHETIC_POD_H_
#define PODSCOPE_TESTS_PROFILER_SYNTHETIC_POD_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "src/capture/host_alignment.h"

namespace podscope::profiler::testing {

struct SyntheticPod {
  std::vector<internal::AlignInput> inputs;
  // The true offset of each host: reference = host + offset.
  std::vector<int64_t> truth;
};

struct PodShape {
  int hosts = 16;
  int collectives = 200;
  int64_t jitter_ns = 2000;           // each end within +-this
  int64_t network_ns = 200'000;       // one-way delay of the Profile call
  int slow_host = 3;                  // this host's network is slower
  int64_t slow_extra_ns = 5'000'000;  // by this much, each way
  uint64_t seed = 7;
};

inline SyntheticPod MakeSyntheticPod(const PodShape& shape) {
  std::mt19937_64 rng(shape.seed);
  std::uniform_int_distribution<int64_t> offset(-20'000'000, 20'000'000);
  std::uniform_int_distribution<int64_t> jitter(-shape.jitter_ns,
                                                shape.jitter_ns);
  SyntheticPod pod;
  // On the reference clock: the call sent at 0, the trace from 1 ms after
  // the request arrives for a second, the answer sent 1 ms after it.
  const int64_t duration = 1'000'000'000;
  for (int h = 0; h < shape.hosts; ++h) {
    const int64_t one_way =
        shape.network_ns + (h == shape.slow_host ? shape.slow_extra_ns : 0);
    const int64_t off = offset(rng);  // reference - host
    const int64_t first = one_way + 1'000'000;
    const int64_t last = first + duration;
    const int64_t received = last + 1'000'000 + one_way;
    internal::AlignInput in;
    in.wallclock_offset_ns = 0;
    in.has_rpc = true;
    in.rpc_lo_ns = 0 - (first - off);
    in.rpc_hi_ns = received - (last - off);
    for (int k = 0; k < shape.collectives; ++k) {
      // Common instants spread over the middle of the trace.
      const int64_t end = 20'000'000 + (k + 1) * (duration - 40'000'000) /
                                           (shape.collectives + 1);
      in.collective_ends.emplace_back(std::to_string(k) + "/all-reduce.1/0",
                                      end - off + jitter(rng));
    }
    pod.inputs.push_back(std::move(in));
    pod.truth.push_back(off);
  }
  return pod;
}

}  // namespace podscope::profiler::testing

#endif  // PODSCOPE_TESTS_PROFILER_SYNTHETIC_POD_H_
