// A TCP port on loopback that was free a moment ago, for benchmarks that
// start a job's coordinator on their own.
#ifndef PODSCOPE_BENCH_COMMON_FREE_PORT_H_
#define PODSCOPE_BENCH_COMMON_FREE_PORT_H_

namespace podscope::bench {

int FreePort();

}  // namespace podscope::bench

#endif  // PODSCOPE_BENCH_COMMON_FREE_PORT_H_
