// `podscope analyze` output: aligned text tables and the JSON document.
#include "analyze_print.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "podscope/base/json.h"
#include "podscope/viewer/analysis_labels.h"
#include "text_format.h"

namespace podscope::tools {
namespace {

using viewer::PodAnalysis;
using viewer::StepCategory;

// Columns padded to their widest cell; the first column left-aligned, the
// others right-aligned (numbers) unless marked left.
class Table {
 public:
  explicit Table(std::vector<std::string> header, size_t left_columns = 1)
      : left_(left_columns) {
    rows_.push_back(std::move(header));
  }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.size() <= 1; }
  std::string Render() const {
    std::vector<size_t> width;
    for (const auto& r : rows_) {
      if (width.size() < r.size()) width.resize(r.size(), 0);
      for (size_t c = 0; c < r.size(); ++c) {
        width[c] = std::max(width[c], Width(r[c]));
      }
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line = "  ";
      for (size_t c = 0; c < r.size(); ++c) {
        const size_t pad = width[c] - Width(r[c]);
        if (c > 0) line += "  ";
        if (c < left_) {
          line += r[c];
          if (c + 1 < r.size()) line.append(pad, ' ');
        } else {
          line.append(pad, ' ');
          line += r[c];
        }
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  // Code points, so that "µs" lines up.
  static size_t Width(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
    return n;
  }
  size_t left_;
  std::vector<std::vector<std::string>> rows_;
};

using viewer::FormatShare;
using viewer::FormatShareOf;
using viewer::RankLabel;

size_t Limit(size_t n, size_t top) { return top == 0 ? n : std::min(n, top); }

void StepSection(const PodAnalysis& a, size_t top, std::string* out) {
  const viewer::StepBreakdown& s = a.steps;
  absl::StrAppend(out, "Steps (", s.rows.size(), ", matched by ",
                  s.matched_by_number ? "step number" : "order", "; ",
                  s.ranks.size(), " ranks)\n");
  if (s.rows.empty()) {
    absl::StrAppend(out, "  no step slices found\n\n");
    return;
  }
  std::vector<std::string> header = {"step"};
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    header.push_back(RankLabel(s, static_cast<int>(r)));
  }
  header.push_back("slowest");
  header.push_back("spread");
  Table t(header);
  const size_t n = Limit(s.rows.size(), top);
  for (size_t k = 0; k < n; ++k) {
    const viewer::StepRow& row = s.rows[k];
    std::vector<std::string> cells = {absl::StrCat(row.step)};
    for (const viewer::StepCell& c : row.ranks) {
      cells.push_back(c.present ? FormatDuration(c.duration_ns) : "-");
    }
    cells.push_back(RankLabel(s, row.slowest_rank));
    cells.push_back(FormatDuration(row.spread_ns));
    t.Add(std::move(cells));
  }
  *out += t.Render();
  if (n < s.rows.size()) {
    absl::StrAppend(out, "  ... ", s.rows.size() - n, " more steps\n");
  }
  absl::StrAppend(out,
                  "\nWhere step time went, per rank (share of its steps)\n");
  std::vector<std::string> h2 = {"rank", "steps", "median", "max"};
  for (int c = 0; c < viewer::kStepCategoryCount; ++c) {
    h2.emplace_back(viewer::StepCategoryName(static_cast<StepCategory>(c)));
  }
  h2.push_back("slowest in");
  Table t2(h2);
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const viewer::RankStepTotals& x = s.totals[r];
    std::vector<std::string> cells = {
        RankLabel(s, static_cast<int>(r)), absl::StrCat(x.steps),
        FormatDuration(x.median_ns), FormatDuration(x.max_ns)};
    for (int c = 0; c < viewer::kStepCategoryCount; ++c) {
      cells.push_back(FormatShareOf(x.category_ns[c], x.total_ns));
    }
    cells.push_back(Plural(x.slowest_count, "step"));
    t2.Add(std::move(cells));
  }
  *out += t2.Render() + "\n";
}

// How the verdict's test came out, for readers who want its figures.
std::string TestEvidence(const viewer::StepBreakdown& st,
                         const viewer::StragglerTest& t) {
  std::string text = absl::StrCat(
      "test: paired t-test over ", t.units,
      t.by_steps ? " steps" : " collectives", " of the wait ",
      RankLabel(st, t.candidate), " caused against the other ranks' mean: ",
      FormatDuration(static_cast<int64_t>(t.mean_excess_ns)), " more a ",
      t.by_steps ? "step" : "collective", ", t = ",
      std::isinf(t.t) ? std::string("inf") : absl::StrFormat("%.2f", t.t),
      t.p_value < 0.0001 ? ", p < 0.0001"
                         : absl::StrFormat(", p = %.2g", t.p_value),
      " (one-sided, times ", st.ranks.size(), " ranks); ");
  if (std::isinf(t.ratio)) {
    absl::StrAppend(&text, "the other ranks caused none");
  } else {
    absl::StrAppend(&text, absl::StrFormat("%.1f", t.ratio),
                    "x the other ranks' mean in all");
  }
  return text;
}

void StragglerSection(const PodAnalysis& a, size_t top, std::string* out) {
  const viewer::StragglerReport& s = a.stragglers;
  const viewer::StepBreakdown& st = a.steps;
  absl::StrAppend(
      out, "Collectives joined across ranks: ", s.collectives.size(), " (",
      s.joined_by_id, " by collective_id, ", s.joined_by_order, " by order)\n");
  if (!s.collectives.empty()) {
    Table t({"rank", "last at", "late by (total)", "wait caused", "own wait"});
    for (const viewer::RankStraggle& r : s.ranks) {
      t.Add({RankLabel(st, r.rank), absl::StrCat(r.last_count),
             FormatDuration(r.late_by_ns), FormatDuration(r.wait_caused_ns),
             FormatDuration(r.waited_ns)});
    }
    *out += t.Render();
    Table c({"collective", "step", "last", "late by", "spread", "wait caused"},
            2);
    // The costliest ones.
    std::vector<const viewer::JoinedCollective*> order;
    for (const auto& j : s.collectives) order.push_back(&j);
    std::stable_sort(order.begin(), order.end(), [](auto* x, auto* y) {
      return x->wait_caused_ns > y->wait_caused_ns;
    });
    for (size_t k = 0; k < Limit(order.size(), top); ++k) {
      const auto& j = *order[k];
      c.Add({j.key,
             j.step_row >= 0 ? absl::StrCat(st.rows[j.step_row].step) : "-",
             RankLabel(st, j.last_rank), FormatDuration(j.late_by_ns),
             FormatDuration(j.spread_ns), FormatDuration(j.wait_caused_ns)});
    }
    absl::StrAppend(out, "\n  costliest collectives:\n");
    *out += c.Render();
  }
  const std::string verdict = viewer::StragglerVerdict(st, s);
  if (!verdict.empty()) absl::StrAppend(out, "\nVerdict: ", verdict, "\n");
  if (s.test.candidate >= 0 && s.test.units >= 2) {
    absl::StrAppend(out, "  ", TestEvidence(st, s.test), "\n");
  }
  if (s.straggler) {
    const viewer::Straggler& g = *s.straggler;
    std::vector<std::string> steps;
    for (int64_t x : g.steps) steps.push_back(absl::StrCat(x));
    absl::StrAppend(
        out, "  it arrived last in steps: ", absl::StrJoin(steps, ", "), "\n");
    std::vector<std::string> names;
    for (const auto& [n, count] : g.collectives) {
      names.push_back(absl::StrCat(n, " x", count));
    }
    absl::StrAppend(out, "  it arrived last at: ", absl::StrJoin(names, ", "),
                    "\n");
    if (!g.longer_scopes.empty()) {
      absl::StrAppend(out,
                      "  its scopes longer than the other ranks' median:\n");
      Table t({"scope", "steps", "own", "others' median", "excess"});
      for (const viewer::LongerScope& l : g.longer_scopes) {
        t.Add({l.name, absl::StrCat(l.steps.size()), FormatDuration(l.own_ns),
               FormatDuration(l.others_median_ns),
               FormatDuration(l.excess_ns())});
      }
      *out += t.Render();
    }
  }
  *out += "\n";
}

// At most `n` characters (code points), "..." standing for the rest.
std::string Shorten(const std::string& s, size_t n) {
  size_t count = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (count++ == n) break;
  }
  return i >= s.size() ? s : s.substr(0, i) + "...";
}

// The first three changes and how many more (the JSON has them all).
std::string Changes(const std::vector<std::string>& c) {
  std::vector<std::string> first(c.begin(),
                                 c.begin() + std::min<size_t>(c.size(), 3));
  std::string out = absl::StrJoin(first, "; ");
  if (c.size() > 3) absl::StrAppend(&out, " (+", c.size() - 3, " more)");
  return out;
}

void CompileSection(const PodAnalysis& a, size_t top, std::string* out) {
  const viewer::CompileReport& c = a.compiles;
  absl::StrAppend(out, "Compiles: ", c.compiles.size(), " (", c.hits,
                  " cache hits, ", c.misses, " misses, ", c.late_misses,
                  " late; ", FormatDuration(c.miss_ns), " compiling)\n");
  if (c.compiles.empty()) {
    *out += "\n";
    return;
  }
  Table t(
      {"rank", "step", "cache", "duration", "graph", "signature", "changed"},
      1);
  size_t shown = 0;
  for (const viewer::CompileEvent& e : c.compiles) {
    // Misses first matter; show every late miss and the others up to top.
    if (!e.late && top > 0 && shown >= top) continue;
    ++shown;
    t.Add({RankLabel(a.steps, e.rank), e.step >= 0 ? absl::StrCat(e.step) : "-",
           !e.cache_hit ? "?" : (*e.cache_hit ? "hit" : "miss"),
           FormatDuration(e.duration_ns), e.graph_hash,
           e.signature.empty() ? "-" : Shorten(e.signature, 40),
           (e.late ? "LATE: " : "") + Changes(e.changes)});
  }
  *out += t.Render() + "\n";
}

void TopSection(const PodAnalysis& a, std::string* out) {
  const viewer::TopWork& w = a.top;
  if (!w.device_ops.empty()) {
    absl::StrAppend(out, "Top device ops by self time\n");
    Table t({"host", "device", "op", "count", "self", "total", "step share"},
            3);
    for (const viewer::WorkEntry& e : w.device_ops) {
      t.Add({e.host_name, absl::StrCat(e.device_id), e.name,
             FormatCount(e.count), FormatDuration(e.self_ns),
             FormatDuration(e.total_ns), FormatShare(e.step_share)});
    }
    *out += t.Render() + "\n";
  }
  if (!w.host_scopes.empty()) {
    absl::StrAppend(out, "Top host scopes by self time\n");
    Table t({"host", "scope", "count", "self", "total", "step share"}, 2);
    for (const viewer::WorkEntry& e : w.host_scopes) {
      t.Add({e.host_name, e.name, FormatCount(e.count),
             FormatDuration(e.self_ns), FormatDuration(e.total_ns),
             FormatShare(e.step_share)});
    }
    *out += t.Render() + "\n";
  }
  absl::StrAppend(out, "Communication/computation overlap\n");
  Table t({"rank", "collective time", "overlapped", "overlap"});
  for (const viewer::RankOverlap& o : w.overlap) {
    t.Add({RankLabel(a.steps, o.rank), FormatDuration(o.collective_ns),
           FormatDuration(o.overlapped_ns),
           o.collective_ns > 0 ? FormatShare(o.overlap()) : "-"});
  }
  *out += t.Render() + "\n";
}

void RooflineSection(const viewer::TraceStore& store, const PodAnalysis& a,
                     std::string* out) {
  const viewer::OpProfile& p = a.ops;
  for (const viewer::HostPeak& h : p.peaks) {
    absl::StrAppend(
        out, "Machine peak of ", h.host_name, ": ",
        absl::StrFormat("%.1f GFLOP/s, %.1f GB/s", h.peak_gflops, h.peak_gbps),
        h.source.empty() ? "" : absl::StrCat(" (", h.source, ")"), "\n");
    if (h.understated) {
      absl::StrAppend(
          out, "  peak understated: ",
          absl::StrFormat("%.1f GFLOP/s, %.1f GB/s", h.recorded_gflops,
                          h.recorded_gbps),
          " was recorded (measured on a busy machine?), but kernels went "
          "faster; their best rate is used as the peak\n");
    }
  }
  auto table = [&](const char* title,
                   const std::vector<viewer::RooflineEntry>& v) {
    if (v.empty()) return;
    absl::StrAppend(out, title, "\n");
    Table t({"host", "name", "count", "time", "GFLOP", "GFLOP/s", "flop/B",
             "bound", "of bound"},
            2);
    for (const viewer::RooflineEntry& e : v) {
      t.Add({e.host < store.hosts().size() ? store.hosts()[e.host].name : "",
             e.name, FormatCount(e.count), FormatDuration(e.time_ns),
             absl::StrFormat("%.3f", static_cast<double>(e.flops) / 1e9),
             absl::StrFormat("%.2f", e.gflops),
             absl::StrFormat("%.2f", e.intensity),
             e.bound_gflops > 0
                 ? absl::StrFormat("%.1f %s", e.bound_gflops,
                                   e.memory_bound ? "mem" : "compute")
                 : "-",
             e.bound_gflops > 0 ? FormatShare(e.fraction_of_bound) : "-"});
    }
    *out += t.Render() + "\n";
  };
  table("Op kinds (roofline)", p.by_kind);
  table("Ops (roofline)", p.by_name);
  if (p.by_kind.empty() && p.by_name.empty()) {
    *out += "Ops: no kernel carries flops / bytes_accessed\n\n";
  }
}

void MemorySection(const PodAnalysis& a, std::string* out) {
  if (a.memory.empty()) {
    *out += "Memory: no allocation events or memory counters\n";
    return;
  }
  absl::StrAppend(out, "Device memory peaks\n");
  for (const viewer::DeviceMemory& m : a.memory) {
    absl::StrAppend(
        out, "  ", RankLabel(a.steps, m.rank), " (", m.host_name, ") device ",
        m.device_id, ": peak ", FormatBytes(static_cast<double>(m.peak_bytes)),
        " at ", FormatDuration(m.peak_ns - a.first_ns), " into the trace",
        m.from_allocations ? absl::StrCat(", ", m.live_count, " live buffers, ",
                                          m.allocations, " allocations")
                           : " (memory counter)",
        "\n");
    if (m.live_at_peak.empty()) continue;
    Table t({"buffer", "bytes", "op", "scope"}, 1);
    for (const viewer::LiveBuffer& b : m.live_at_peak) {
      t.Add({absl::StrCat(b.buffer_id),
             FormatBytes(static_cast<double>(b.bytes)), b.op,
             b.scope.empty() ? "-" : b.scope});
    }
    *out += t.Render();
  }
}

}  // namespace

std::string AnalysisText(const viewer::TraceStore& store, const PodAnalysis& a,
                         size_t top) {
  std::string out;
  StepSection(a, top, &out);
  StragglerSection(a, top, &out);
  CompileSection(a, top, &out);
  TopSection(a, &out);
  RooflineSection(store, a, &out);
  MemorySection(a, &out);
  return out;
}

}  // namespace podscope::tools
