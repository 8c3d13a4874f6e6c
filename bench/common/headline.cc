#include "headline.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace podscope::bench {
namespace {

std::map<std::string, std::string>& Units() {
  static auto* units = new std::map<std::string, std::string>();
  return *units;
}

// Keeps every headline counter's value while the console reporter prints
// as usual: the median of the repetitions when there are several (never
// their mean, standard deviation or coefficient of variation), else the
// last run's.
class HeadlineReporter : public benchmark::ConsoleReporter {
 public:
  HeadlineReporter() : ConsoleReporter(OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool aggregate = run.run_type == Run::RT_Aggregate;
      const bool median = aggregate && run.aggregate_name == "median";
      if (aggregate && !median) continue;
      for (const auto& [name, counter] : run.counters) {
        if (!Units().count(name)) continue;
        if (!median && from_median_.count(name)) continue;
        values_[name] = counter.value;
        if (median) from_median_.insert(name);
      }
    }
  }
  const std::map<std::string, double>& values() const { return values_; }

 private:
  std::map<std::string, double> values_;
  std::set<std::string> from_median_;
};

}  // namespace

void RegisterHeadline(const std::string& name, const std::string& unit) {
  Units()[name] = unit;
}

int RunBenchmarksWithHeadlines(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  HeadlineReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  std::fflush(stdout);
  for (const auto& [name, value] : reporter.values()) {
    std::printf("%s %.6g %s\n", name.c_str(), value, Units()[name].c_str());
  }
  return 0;
}

}  // namespace podscope::bench
