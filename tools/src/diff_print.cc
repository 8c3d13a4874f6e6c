#include "diff_print.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/base/human_format.h"
#include "podscope/base/json.h"

namespace podscope::tools {
namespace {

using viewer::DiffFigure;
using viewer::NamedChange;
using viewer::SessionDiff;

std::string Dur(double ns) {
  return base::FormatDuration(static_cast<int64_t>(std::llround(ns)));
}

std::string SignedDur(double ns) {
  return (ns < 0 ? "-" : "+") + Dur(std::abs(ns));
}

std::string Pct(double fraction) {
  return absl::StrFormat("%+.1f %%", 100 * fraction);
}

std::string PValue(double p) {
  return p < 1e-4 ? std::string("<0.0001") : absl::StrFormat("%.2g", p);
}

// "  label  base  cand  change  delta  p  effect  [significant|noise]"
void Row(std::string* out, std::string_view label, const DiffFigure& f) {
  absl::StrAppendFormat(
      out, "  %-28s %10s %10s %9s %11s  p=%-7s r=%+.2f  %s\n", label,
      Dur(f.base_ns), Dur(f.cand_ns), Pct(f.change()), SignedDur(f.delta_ns()),
      PValue(f.test.p_value), f.test.effect,
      f.significant ? (f.delta_ns() > 0 ? "SLOWER" : "FASTER") : "noise");
}

void Header(std::string* out, std::string_view title) {
  absl::StrAppendFormat(out, "\n%s\n  %-28s %10s %10s %9s %11s\n", title, "",
                        "baseline", "candidate", "change", "delta");
}

void Figure(base::JsonWriter& j, const DiffFigure& f) {
  j.BeginObject();
  j.Field("name", f.name);
  j.Field("base_steps", f.base_n).Field("cand_steps", f.cand_n);
  j.Field("base_ns", f.base_ns).Field("cand_ns", f.cand_ns);
  j.Field("delta_ns", f.delta_ns()).Field("change", f.change());
  j.Field("u", f.test.u).Field("p_value", f.test.p_value);
  j.Field("effect", f.test.effect).Field("significant", f.significant);
  j.EndObject();
}

void Named(base::JsonWriter& j, const NamedChange& c) {
  j.BeginObject();
  j.Field("kind", viewer::NamedChangeKindName(c.kind));
  j.Key("figure");
  Figure(j, c.figure);
  j.Field("rank", c.rank).Field("rank_delta_ns", c.rank_delta_ns);
  j.Field("base_count", c.base_count).Field("cand_count", c.cand_count);
  j.EndObject();
}

}  // namespace

std::string DiffText(const std::string& baseline, const std::string& candidate,
                     const SessionDiff& diff,
                     const std::vector<GateResult>& gates) {
  std::string out = absl::StrFormat(
      "podscope diff\n  baseline:  %s (%d steps)\n  candidate: %s (%d "
      "steps)\n  %d ranks matched by rank; steps matched by %s\n\n%s\n",
      baseline, diff.base_steps, candidate, diff.cand_steps, diff.ranks,
      diff.matched_by_number ? "number" : "order", viewer::DiffVerdict(diff));
  Header(&out, "Step time (the job's: the slowest rank's per step)");
  Row(&out, "median", diff.step_median);
  Row(&out, "p90", diff.step_p90);
  Header(&out, "Step time per rank (median, p90)");
  for (const viewer::RankDiff& r : diff.per_rank) {
    Row(&out, r.label + " median", r.median);
    Row(&out, r.label + " p90", r.p90);
  }
  if (diff.largest_rank >= 0) {
    absl::StrAppend(&out, "  largest change: rank ", diff.largest_rank,
                    " (its own work, less its waits in collectives: ",
                    SignedDur(diff.largest_rank_own_ns), " per step)\n");
  }
  Header(&out, "By category (mean per rank per step)");
  for (const DiffFigure& c : diff.categories) Row(&out, c.name.substr(9), c);
  Header(&out,
         "Largest changes by op, host scope and collective (mean per "
         "rank per step; the rank that moved most)");
  if (diff.changes.empty()) out += "  (no name in both sessions)\n";
  for (const NamedChange& c : diff.changes) {
    Row(&out, c.figure.name, c.figure);
    if (c.rank >= 0 && c.rank_delta_ns != 0) {
      absl::StrAppend(&out, "      most on rank ", c.rank, ": ",
                      SignedDur(c.rank_delta_ns), " per step\n");
    }
  }
  auto list = [&](std::string_view title, const std::vector<NamedChange>& v,
                  bool cand) {
    if (v.empty()) return;
    out += "\n" + std::string(title) + "\n";
    for (const NamedChange& c : v) {
      absl::StrAppendFormat(&out, "  %-40s %10s per rank per step, %d times\n",
                            c.figure.name,
                            Dur(cand ? c.figure.cand_ns : c.figure.base_ns),
                            cand ? c.cand_count : c.base_count);
    }
  };
  list("New in the candidate", diff.appeared, true);
  list("Gone from the candidate", diff.vanished, false);
  const viewer::RecompileDiff& r = diff.recompiles;
  absl::StrAppendFormat(&out,
                        "\nRecompiles: %d misses (%d late) -> %d misses (%d "
                        "late)\n",
                        r.base_misses, r.base_late, r.cand_misses, r.cand_late);
  for (const std::string& m : r.new_misses) {
    absl::StrAppend(&out, "  new: ", m, "\n");
  }
  if (!gates.empty()) out += "\nGates\n";
  for (const GateResult& g : gates) {
    absl::StrAppendFormat(
        &out, "  %-6s %s (found %s)\n", g.holds ? "FAILED" : "ok", g.gate.text,
        g.gate.unit == DiffGate::Unit::kPercent ? Pct(g.observed)
        : g.gate.unit == DiffGate::Unit::kNanoseconds
            ? SignedDur(g.observed)
            : absl::StrFormat("%+g", g.observed));
  }
  return out;
}

std::string DiffJson(const std::string& baseline, const std::string& candidate,
                     const SessionDiff& diff,
                     const std::vector<GateResult>& gates) {
  std::string out;
  base::JsonWriter j(&out);
  j.BeginObject();
  j.Field("baseline", baseline).Field("candidate", candidate);
  j.Field("ranks", diff.ranks);
  j.Field("base_steps", diff.base_steps).Field("cand_steps", diff.cand_steps);
  j.Field("matched_by", diff.matched_by_number ? "number" : "order");
  j.Field("verdict", viewer::DiffVerdict(diff));
  j.Key("step_median");
  Figure(j, diff.step_median);
  j.Key("step_p90");
  Figure(j, diff.step_p90);
  j.Key("per_rank").BeginArray();
  for (const viewer::RankDiff& r : diff.per_rank) {
    j.BeginObject().Field("rank", r.rank).Field("label", r.label);
    j.Key("median");
    Figure(j, r.median);
    j.Key("p90");
    Figure(j, r.p90);
    j.EndObject();
  }
  j.EndArray();
  j.Field("largest_change_rank", diff.largest_rank);
  j.Field("largest_change_rank_own_ns", diff.largest_rank_own_ns);
  j.Key("categories").BeginArray();
  for (const DiffFigure& c : diff.categories) Figure(j, c);
  j.EndArray();
  for (auto [key, list] : {std::pair{"changes", &diff.changes},
                           std::pair{"appeared", &diff.appeared},
                           std::pair{"vanished", &diff.vanished}}) {
    j.Key(key).BeginArray();
    for (const NamedChange& c : *list) Named(j, c);
    j.EndArray();
  }
  const viewer::RecompileDiff& r = diff.recompiles;
  j.Key("recompiles").BeginObject();
  j.Field("base_misses", r.base_misses).Field("cand_misses", r.cand_misses);
  j.Field("base_late", r.base_late).Field("cand_late", r.cand_late);
  j.Key("new_misses").BeginArray();
  for (const std::string& m : r.new_misses) j.String(m);
  j.EndArray();
  j.EndObject();
  j.Key("gates").BeginArray();
  for (const GateResult& g : gates) {
    j.BeginObject().Field("condition", g.gate.text);
    j.Field("observed", g.observed).Field("failed", g.holds).EndObject();
  }
  j.EndArray();
  j.EndObject();
  out += "\n";
  return out;
}

}  // namespace podscope::tools
