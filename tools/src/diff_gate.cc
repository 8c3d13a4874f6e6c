#include "diff_gate.h"

#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace podscope::tools {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n'; }

std::string_view StripTrailing(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view Strip(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return StripTrailing(s);
}

bool ConsumeSuffix(std::string_view* s, std::string_view suffix) {
  if (!s->ends_with(suffix)) return false;
  s->remove_suffix(suffix.size());
  return true;
}

absl::Status Bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--fail_if '", std::string(text), "': ", std::string(why),
      " (expected FIGURE OP CHANGE [and p<X], e.g. 'step_ms.median > +5%' "
      "or 'op:conv2d > +2ms and p<0.01')"));
}

std::optional<double> Number(std::string_view s) {
  s = Strip(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() ||
      !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

bool IsCountFigure(std::string_view figure) {
  return figure == "recompiles.misses" || figure == "recompiles.late" ||
         figure == "recompiles.new";
}

// Splits a trailing "p<X" (after "and", "&&" or ",") off `rest`.
absl::StatusOr<std::optional<double>> TakePClause(std::string_view text,
                                                  std::string_view* rest) {
  std::string_view s = StripTrailing(*rest);
  const size_t lt = s.rfind('<');
  if (lt == std::string_view::npos) return std::nullopt;
  std::string_view before = StripTrailing(s.substr(0, lt));
  if (before.empty() || (before.back() != 'p' && before.back() != 'P')) {
    return std::nullopt;
  }
  before.remove_suffix(1);
  // "p" must stand alone: "...ms and p<", "..., p<", "...ms p<".
  if (!before.empty() && !IsSpace(before.back()) && before.back() != ',') {
    return std::nullopt;
  }
  const std::optional<double> p = Number(s.substr(lt + 1));
  if (!p || *p <= 0 || *p > 1) {
    return Bad(text, "p<X needs X in (0, 1]");
  }
  before = StripTrailing(before);
  for (std::string_view joint : {"and", "AND", "&&", ","}) {
    if (ConsumeSuffix(&before, joint)) break;
  }
  *rest = StripTrailing(before);
  return p;
}

}  // namespace

absl::StatusOr<DiffGate> ParseDiffGate(std::string_view text) {
  DiffGate g;
  g.text = std::string(text);
  std::string_view rest = text;
  auto p = TakePClause(text, &rest);
  if (!p.ok()) return p.status();
  g.max_p = *p;
  // The operator: the last '<' or '>' (figure names may hold either).
  const size_t at = rest.find_last_of("<>");
  if (at == std::string_view::npos) return Bad(text, "no operator < or >");
  std::string_view value = rest.substr(at + 1);
  const bool greater = rest[at] == '>';
  bool equal = false;
  if (value.starts_with('=')) {
    value.remove_prefix(1);
    equal = true;
  }
  g.op = greater
             ? (equal ? DiffGate::Op::kGreaterEqual : DiffGate::Op::kGreater)
             : (equal ? DiffGate::Op::kLessEqual : DiffGate::Op::kLess);
  g.figure = std::string(Strip(rest.substr(0, at)));
  if (g.figure.empty()) return Bad(text, "no figure before the operator");
  value = Strip(value);
  struct Suffix {
    std::string_view text;
    DiffGate::Unit unit;
    double scale;
  };
  constexpr Suffix kSuffixes[] = {
      {"%", DiffGate::Unit::kPercent, 0.01},
      {"ns", DiffGate::Unit::kNanoseconds, 1},
      {"us", DiffGate::Unit::kNanoseconds, 1e3},
      {"µs", DiffGate::Unit::kNanoseconds, 1e3},
      {"ms", DiffGate::Unit::kNanoseconds, 1e6},
      {"s", DiffGate::Unit::kNanoseconds, 1e9},
  };
  for (const Suffix& s : kSuffixes) {
    std::string_view v = value;
    if (!ConsumeSuffix(&v, s.text)) continue;
    const std::optional<double> n = Number(v);
    if (!n) return Bad(text, "'" + std::string(value) + "' is not a number");
    g.unit = s.unit;
    g.threshold = *n * s.scale;
    if (IsCountFigure(g.figure) && g.unit != DiffGate::Unit::kPercent) {
      return Bad(text, "a count takes a plain number or %, not a time");
    }
    return g;
  }
  const std::optional<double> n = Number(value);
  if (!n) return Bad(text, "'" + std::string(value) + "' is not a number");
  if (!IsCountFigure(g.figure)) {
    return Bad(text,
               "'" + std::string(value) + "' needs a unit: %, ns, us, ms or s");
  }
  g.unit = DiffGate::Unit::kCount;
  g.threshold = *n;
  return g;
}

absl::StatusOr<bool> GateHolds(const DiffGate& gate,
                               const viewer::SessionDiff& diff,
                               double* observed) {
  double change = 0;
  double p_value = 0;  // counts are exact
  if (IsCountFigure(gate.figure)) {
    const viewer::RecompileDiff& r = diff.recompiles;
    double base = 0, cand = 0;
    if (gate.figure == "recompiles.misses") {
      base = static_cast<double>(r.base_misses);
      cand = static_cast<double>(r.cand_misses);
    } else if (gate.figure == "recompiles.late") {
      base = static_cast<double>(r.base_late);
      cand = static_cast<double>(r.cand_late);
    } else {
      cand = static_cast<double>(r.new_misses.size());
    }
    change = gate.unit == DiffGate::Unit::kPercent
                 ? (base == 0 ? (cand == 0 ? 0 : 1) : (cand - base) / base)
                 : cand - base;
  } else {
    const viewer::DiffFigure* f = diff.Find(gate.figure);
    if (f == nullptr) {
      std::vector<std::string> names;
      for (const viewer::DiffFigure* x : diff.Figures()) {
        if (names.size() == 12) {
          names.push_back("...");
          break;
        }
        names.push_back(x->name);
      }
      return absl::NotFoundError(absl::StrCat(
          "--fail_if '", gate.text, "': the diff has no figure '", gate.figure,
          "' (it has ", absl::StrJoin(names, ", "),
          ", recompiles.misses, recompiles.late, recompiles.new)"));
    }
    change =
        gate.unit == DiffGate::Unit::kPercent ? f->change() : f->delta_ns();
    p_value = f->test.p_value;
  }
  *observed = change;
  bool holds = false;
  switch (gate.op) {
    case DiffGate::Op::kGreater:
      holds = change > gate.threshold;
      break;
    case DiffGate::Op::kGreaterEqual:
      holds = change >= gate.threshold;
      break;
    case DiffGate::Op::kLess:
      holds = change < gate.threshold;
      break;
    case DiffGate::Op::kLessEqual:
      holds = change <= gate.threshold;
      break;
  }
  if (gate.max_p && !(p_value < *gate.max_p)) holds = false;
  return holds;
}

}  // namespace podscope::tools
