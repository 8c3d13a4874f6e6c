// The bench/run contract: every suite prints its headline figures, one per
// line, as `NAME VALUE UNIT`, after Google Benchmark's own output, and
// writes the full JSON where --benchmark_out says.
//
// A benchmark publishes a headline by setting a user counter whose name is
// the headline's name (e.g. "format.bytes_per_event") and registering the
// unit once with RegisterHeadline.
#ifndef PODSCOPE_BENCH_COMMON_HEADLINE_H_
#define PODSCOPE_BENCH_COMMON_HEADLINE_H_

#include <string>

namespace podscope::bench {

// Declares that counter `name` is a headline figure measured in `unit`.
void RegisterHeadline(const std::string& name, const std::string& unit);

// Runs the registered benchmarks and prints the headlines. Use as main.
int RunBenchmarksWithHeadlines(int argc, char** argv);

}  // namespace podscope::bench

#define PODSCOPE_BENCH_MAIN()                                         \
  int main(int argc, char** argv) {                                   \
    return ::podscope::bench::RunBenchmarksWithHeadlines(argc, argv); \
  }

#endif  // PODSCOPE_BENCH_COMMON_HEADLINE_H_
