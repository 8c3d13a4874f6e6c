// The straggler test (pod_analysis.h, StragglerTest): a paired one-sided
// t-test over steps on the wait each rank caused.
#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"

namespace podscope::viewer::pod {
namespace {

// The continued fraction of the regularized incomplete beta function,
// evaluated by the modified Lentz method.
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1;
  double d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEpsilon) break;
  }
  return h;
}

// I_x(a, b), for x in [0, 1].
double RegularizedBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
               a * std::log(x) + b * std::log1p(-x));
  // The fraction converges fast on this side of the mean; use the
  // symmetry I_x(a, b) = 1 - I_{1-x}(b, a) on the other.
  if (x < (a + 1) / (a + b + 2)) {
    return front * BetaContinuedFraction(a, b, x) / a;
  }
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

// P(T > t) for Student's t with `df` degrees of freedom.
double StudentUpperTail(double t, double df) {
  const double tail = 0.5 * RegularizedBeta(df / 2, 0.5, df / (df + t * t));
  return t >= 0 ? tail : 1 - tail;
}

// caused[u][r] over the units of the test (pod_analysis.h).
std::vector<std::vector<int64_t>> CausedPerUnit(const StepBreakdown& steps,
                                                const StragglerReport& report,
                                                bool* by_steps) {
  const size_t ranks = report.ranks.size();
  std::vector<int> unit_of_row(steps.rows.size(), -1);
  size_t rows_used = 0;
  for (const JoinedCollective& j : report.collectives) {
    if (j.step_row >= 0 && unit_of_row[j.step_row] < 0) {
      unit_of_row[j.step_row] = static_cast<int>(rows_used++);
    }
  }
  *by_steps = rows_used >= 2;
  std::vector<std::vector<int64_t>> caused(
      *by_steps ? rows_used : report.collectives.size(),
      std::vector<int64_t>(ranks, 0));
  for (size_t i = 0; i < report.collectives.size(); ++i) {
    const JoinedCollective& j = report.collectives[i];
    if (j.last_rank < 0) continue;
    if (*by_steps && j.step_row < 0) continue;
    const size_t unit = *by_steps ? unit_of_row[j.step_row] : i;
    int64_t& cell = caused[unit][j.last_rank];
    cell = base::SaturatingAdd(cell, j.wait_caused_ns);
  }
  return caused;
}

}  // namespace

StragglerTest RunStragglerTest(const StepBreakdown& steps,
                               const StragglerReport& report) {
  StragglerTest out;
  const size_t ranks = report.ranks.size();
  for (size_t r = 0; r < ranks; ++r) {
    const int64_t caused = report.ranks[r].wait_caused_ns;
    if (caused > 0 && (out.candidate < 0 ||
                       caused > report.ranks[out.candidate].wait_caused_ns)) {
      out.candidate = static_cast<int>(r);
    }
  }
  if (out.candidate < 0 || ranks < 2) return out;
  const auto caused = CausedPerUnit(steps, report, &out.by_steps);
  out.units = caused.size();

  double others_total = 0;
  for (size_t r = 0; r < ranks; ++r) {
    if (static_cast<int>(r) == out.candidate) continue;
    others_total += static_cast<double>(report.ranks[r].wait_caused_ns);
  }
  const double others_mean = others_total / static_cast<double>(ranks - 1);
  const double own =
      static_cast<double>(report.ranks[out.candidate].wait_caused_ns);
  out.ratio = others_mean > 0 ? own / others_mean
                              : std::numeric_limits<double>::infinity();

  std::vector<double> d;
  d.reserve(caused.size());
  for (const std::vector<int64_t>& unit : caused) {
    double others = 0;
    for (size_t r = 0; r < ranks; ++r) {
      if (static_cast<int>(r) != out.candidate) {
        others += static_cast<double>(unit[r]);
      }
    }
    d.push_back(static_cast<double>(unit[out.candidate]) -
                others / static_cast<double>(ranks - 1));
  }
  if (d.size() < 2) return out;
  const double n = static_cast<double>(d.size());
  double sum = 0;
  for (double x : d) sum += x;
  out.mean_excess_ns = sum / n;
  double squares = 0;
  for (double x : d)
    squares += (x - out.mean_excess_ns) * (x - out.mean_excess_ns);
  const double sd = std::sqrt(squares / (n - 1));
  double one_sided;
  if (sd <= std::fabs(out.mean_excess_ns) * 1e-12) {
    out.t =
        out.mean_excess_ns > 0 ? std::numeric_limits<double>::infinity() : 0;
    one_sided = out.mean_excess_ns > 0 ? 0 : 1;
  } else {
    out.t = out.mean_excess_ns / (sd / std::sqrt(n));
    one_sided = StudentUpperTail(out.t, n - 1);
  }
  out.p_value = std::min(1.0, one_sided * static_cast<double>(ranks));
  return out;
}

}  // namespace podscope::viewer::pod
