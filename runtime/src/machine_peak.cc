#include "machine_peak.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "instrumentation.h"
#include "podscope/base/file_names.h"
#include "podscope/profiler/session.h"

namespace podscope::runtime::internal {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string model = line.substr(colon + 1);
    model.erase(0, model.find_first_not_of(" \t"));
    // Tabs separate the cache's fields.
    std::replace(model.begin(), model.end(), '\t', ' ');
    return model;
  }
  return "unknown cpu";
}

std::string CacheKey(int threads) {
  return absl::StrCat(CpuModel(), " threads=", threads);
}

using ConstMatrix =
    Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>>;
using Matrix = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;

// The best rate of square f32 products over about `budget_ns`.
double MeasureGemmGflops(const IntraOpPool& pool, int64_t budget_ns) {
  constexpr int64_t kN = 512;
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 0.5f), c(kN * kN);
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {
      Eigen::IndexPair<int>(1, 0)};
  ConstMatrix lhs(a.data(), kN, kN);
  ConstMatrix rhs(b.data(), kN, kN);
  Matrix out(c.data(), kN, kN);
  out.device(pool.device()) = lhs.contract(rhs, dims);  // warm up
  double best = 0;
  const int64_t deadline = NowNs() + budget_ns;
  for (int rep = 0; rep < 50; ++rep) {
    const int64_t start = NowNs();
    out.device(pool.device()) = lhs.contract(rhs, dims);
    const int64_t ns = std::max<int64_t>(1, NowNs() - start);
    best = std::max(best, 2.0 * kN * kN * kN / static_cast<double>(ns));
    if (NowNs() > deadline && rep >= 1) break;
  }
  return best;
}

// The best rate of a streaming triad (a = b + s * c, 3 x 32 MB) on all of
// the pool's threads, counting the bytes read and written.
double MeasureBandwidthGbps(const IntraOpPool& pool, int64_t budget_ns) {
  constexpr int64_t kN = int64_t{8} << 20;
  std::vector<float> a(kN), b(kN, 1.0f), c(kN, 2.0f);
  auto triad = [&] {
    pool.ParallelFor(kN, 1 << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) a[i] = b[i] + 0.5f * c[i];
    });
  };
  triad();  // warm up: the pages are touched
  double best = 0;
  const int64_t deadline = NowNs() + budget_ns;
  for (int rep = 0; rep < 20; ++rep) {
    const int64_t start = NowNs();
    triad();
    const int64_t ns = std::max<int64_t>(1, NowNs() - start);
    best = std::max(best, 3.0 * kN * sizeof(float) / static_cast<double>(ns));
    if (NowNs() > deadline && rep >= 1) break;
  }
  return best;
}

bool ReadCache(const std::string& path, const std::string& key,
               MachinePeak* peak) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    if (fields.size() != 3 || fields[0] != key) continue;
    double gflops = 0, gbps = 0;
    if (!absl::SimpleAtod(fields[1], &gflops) ||
        !absl::SimpleAtod(fields[2], &gbps) || gflops <= 0 || gbps <= 0) {
      continue;  // a damaged line is measured again
    }
    peak->gflops = gflops;
    peak->gbps = gbps;
    return true;
  }
  return false;
}

// Rewrites the cache with `key`'s entry replaced, through a temporary file
// renamed into place, so a reader never sees half a file.
void WriteCache(const std::string& path, const std::string& key,
                const MachinePeak& peak) {
  std::error_code error =
      base::MakeDirectories(std::filesystem::path(path).parent_path().string());
  if (error) return;
  std::ostringstream kept;
  {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(key + "\t", 0) == 0 || line.empty()) continue;
      kept << line << '\n';
    }
  }
  const std::string temp = absl::StrCat(path, ".", getpid(), ".tmp");
  {
    std::ofstream out(temp, std::ios::trunc);
    out << kept.str()
        << absl::StrFormat("%s\t%.2f\t%.2f\n", key, peak.gflops, peak.gbps);
    // Closed here, and checked: a write that fails only at close must not
    // be renamed into place.
    out.close();
    if (!out) {
      std::filesystem::remove(temp, error);
      return;
    }
  }
  std::filesystem::rename(temp, path, error);
  if (error) std::filesystem::remove(temp, error);
}

}  // namespace

std::string MachinePeakCachePath() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') {
    return absl::StrCat(xdg, "/podscope/machine-peak");
  }
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') {
    return absl::StrCat(home, "/.cache/podscope/machine-peak");
  }
  return "";
}

MachinePeak LoadOrMeasureMachinePeak(const IntraOpPool& pool) {
  MachinePeak peak;
  peak.threads = pool.num_threads();
  const std::string key = CacheKey(peak.threads);
  const std::string path = MachinePeakCachePath();
  if (!path.empty() && ReadCache(path, key, &peak)) {
    peak.cached = true;
    return peak;
  }
  peak.gflops = MeasureGemmGflops(pool, 200'000'000);
  peak.gbps = MeasureBandwidthGbps(pool, 100'000'000);
  // To the cache's precision, so the process that measured and the ones
  // that read the cache report the same figures.
  peak.gflops = std::round(peak.gflops * 100) / 100;
  peak.gbps = std::round(peak.gbps * 100) / 100;
  if (!path.empty()) WriteCache(path, key, peak);
  return peak;
}

void RecordMachinePeak(const IntraOpPool& pool) {
  static std::once_flag once;
  std::call_once(once, [&pool] {
    const MachinePeak peak = LoadOrMeasureMachinePeak(pool);
    profiler::SetMetadataAttribute("machine.peak_gflops",
                                   absl::StrFormat("%.1f", peak.gflops));
    profiler::SetMetadataAttribute("machine.peak_gbps",
                                   absl::StrFormat("%.1f", peak.gbps));
    profiler::SetMetadataAttribute("machine.peak_threads",
                                   absl::StrCat(peak.threads));
    profiler::SetMetadataAttribute("machine.peak_source",
                                   peak.cached ? "cached" : "measured");
  });
}

}  // namespace podscope::runtime::internal
