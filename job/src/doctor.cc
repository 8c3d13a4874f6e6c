// The job doctor's judgement (doctor.h): desyncs and stalls from the ranks'
// heartbeat states, in the sentences docs/doctor.md lists.

#include "podscope/job/doctor.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace podscope::job {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // …

void Cap(std::string& s) {
  if (s.size() > DoctorLimits::kMaxString) s.resize(DoctorLimits::kMaxString);
}

void TrimScopes(std::vector<std::string>& scopes) {
  if (static_cast<int>(scopes.size()) > DoctorLimits::kMaxScopes) {
    scopes.erase(scopes.begin(), scopes.end() - (DoctorLimits::kMaxScopes - 1));
    scopes.insert(scopes.begin(), std::string(kEllipsis));
  }
  for (std::string& s : scopes) Cap(s);
}

double Seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

std::string RankList(const std::vector<int>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ",
                      absl::StrJoin(ranks, ", "));
}

// "f32 x 1024, root 0" (desync) or "f32 x 1024, sum" (with_op).
std::string Signature(const CollectiveCall& c, bool with_op) {
  std::vector<std::string> parts;
  if (!c.dtype.empty()) parts.push_back(absl::StrCat(c.dtype, " x ", c.count));
  if (with_op && !c.op.empty()) parts.push_back(c.op);
  if (c.root >= 0) parts.push_back(absl::StrCat("root ", c.root));
  return absl::StrJoin(parts, ", ");
}

std::string WithSignature(const CollectiveCall& c, bool with_op) {
  const std::string sig = Signature(c, with_op);
  return sig.empty() ? c.kind : absl::StrCat(c.kind, " (", sig, ")");
}

bool SameCall(const CollectiveCall& a, const CollectiveCall& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.count == b.count &&
         a.root == b.root;
}

std::string FromScopes(const std::vector<std::string>& scopes) {
  return scopes.empty() ? "" : absl::StrCat(" from ", ScopePath(scopes));
}

std::string ThreadName(const IssuerState& t) {
  return t.main_thread ? "main thread" : absl::StrCat("thread ", t.tid);
}

// One group as every rank with a state sees it; a rank that never used the
// group has last_entered -1.
struct GroupView {
  std::string name;
  std::vector<int> ranks;                // ranks with a state
  std::vector<const GroupState*> state;  // by position in `ranks`; may be null
};

int64_t LastEntered(const GroupState* g) {
  return g == nullptr ? -1 : g->last_entered;
}

std::optional<Verdict> Desync(const GroupView& view) {
  std::map<int64_t, std::vector<size_t>> by_sequence;
  for (size_t i = 0; i < view.ranks.size(); ++i) {
    if (LastEntered(view.state[i]) >= 0) {
      by_sequence[view.state[i]->last_entered].push_back(i);
    }
  }
  for (const auto& [sequence, members] : by_sequence) {
    // Classes of equal calls, in order of their lowest rank.
    std::vector<std::vector<size_t>> classes;
    for (size_t i : members) {
      auto same = std::find_if(classes.begin(), classes.end(), [&](auto& c) {
        return SameCall(view.state[c[0]]->last_call, view.state[i]->last_call);
      });
      if (same == classes.end()) {
        classes.push_back({i});
      } else {
        same->push_back(i);
      }
    }
    if (classes.size() < 2) continue;
    std::stable_sort(classes.begin(), classes.end(),
                     [](auto& a, auto& b) { return a.size() > b.size(); });
    std::vector<std::string> clauses;
    for (size_t k = 0; k < classes.size(); ++k) {
      std::vector<int> ranks;
      for (size_t i : classes[k]) ranks.push_back(view.ranks[i]);
      const CollectiveCall& call = view.state[classes[k][0]]->last_call;
      clauses.push_back(absl::StrCat(RankList(ranks), " called ",
                                     WithSignature(call, /*with_op=*/false),
                                     k == 0 ? "" : FromScopes(call.scopes)));
    }
    Verdict v;
    v.kind = VerdictKind::kDesynced;
    v.rank = view.ranks[classes[1][0]];
    v.group = view.name;
    v.sequence = sequence;
    v.sentence = absl::StrCat("desync at #", sequence, " of group ", view.name,
                              ": ", absl::StrJoin(clauses, "; "));
    return v;
  }
  return std::nullopt;
}

std::string MissingClause(int rank, const RankState& state,
                          const GroupState* group, int64_t now_ns) {
  const int64_t last = LastEntered(group);
  const std::string last_text = last < 0 ? "none" : absl::StrCat("#", last);
  std::string where;
  if (!state.issuer.has_value()) {
    where = "nothing is known of where it is";
  } else if (state.issuer->scopes.empty()) {
    where = absl::StrFormat("its %s is in no traced scope",
                            ThreadName(*state.issuer));
  } else {
    where = absl::StrFormat("it has been in %s for %.1f s",
                            ScopePath(state.issuer->scopes),
                            Seconds(now_ns - state.issuer->innermost_since_ns));
  }
  return absl::StrCat("rank ", rank, " has not \xE2\x80\x94 ", where,
                      " (last collective: ", last_text, ")");
}

std::optional<Verdict> Stall(const GroupView& view,
                             const std::vector<std::optional<RankState>>& all,
                             int64_t now_ns, const StallPolicy& policy) {
  int64_t top = -1;
  for (const GroupState* g : view.state) top = std::max(top, LastEntered(g));
  if (top < 0) return std::nullopt;
  // A group smaller than the job (a sub-communicator) has as members only
  // the ranks that reported it.
  bool whole_job = true;
  for (const GroupState* g : view.state) {
    if (g != nullptr && g->size > 0 &&
        g->size < static_cast<int>(view.ranks.size())) {
      whole_job = false;
    }
  }
  std::vector<size_t> in, missing;
  int64_t first_entry = INT64_MAX, last_entry = 0, median = 0;
  for (size_t i = 0; i < view.ranks.size(); ++i) {
    const GroupState* g = view.state[i];
    if (g == nullptr && !whole_job) continue;
    if (LastEntered(g) < top) {
      missing.push_back(i);
      continue;
    }
    // Finished on some rank: it is not waiting for anyone.
    if (g->last_finished >= top) return std::nullopt;
    in.push_back(i);
    first_entry = std::min(first_entry, g->last_call.entered_ns);
    last_entry = std::max(last_entry, g->last_call.entered_ns);
    median = std::max(median, g->median_ns);
  }
  // In double, capped: a rank's median is its word, not to be trusted
  // with an overflow.
  const double scaled = std::min(
      policy.median_factor * static_cast<double>(std::max<int64_t>(median, 0)),
      1e18);
  const int64_t threshold =
      std::max(absl::ToInt64Nanoseconds(policy.stall_after),
               static_cast<int64_t>(scaled));
  const CollectiveCall& call = view.state[in[0]]->last_call;
  const int64_t since = missing.empty() ? last_entry : first_entry;
  if (now_ns - since <= threshold) return std::nullopt;
  // Judge only on states taken after the threshold passed: an older one
  // cannot say the rank had not entered by then.
  for (size_t i = 0; i < view.ranks.size(); ++i) {
    if (all[view.ranks[i]]->taken_ns < since + threshold) return std::nullopt;
  }
  std::vector<int> in_ranks;
  for (size_t i : in) in_ranks.push_back(view.ranks[i]);
  Verdict v;
  v.kind = VerdictKind::kStalled;
  v.group = view.name;
  v.sequence = top;
  std::string lead =
      absl::StrCat(call.kind, " #", top, " of group ", view.name);
  const std::string sig = Signature(call, /*with_op=*/true);
  if (!sig.empty()) absl::StrAppend(&lead, " (", sig, ")");
  lead = absl::StrFormat("%s has waited %.1f s: ", lead,
                         Seconds(now_ns - first_entry));
  if (!missing.empty()) {
    std::vector<std::string> clauses;
    for (size_t i : missing) {
      clauses.push_back(MissingClause(view.ranks[i], *all[view.ranks[i]],
                                      view.state[i], now_ns));
    }
    v.rank = view.ranks[missing[0]];
    v.sentence = absl::StrCat(lead, RankList(in_ranks), " entered it",
                              FromScopes(call.scopes), "; ",
                              absl::StrJoin(clauses, "; "));
    return v;
  }
  // Every rank entered and none finished: the rank whose issuing thread
  // went silent before the last of its peers entered, if one did.
  const IssuerState* silent = nullptr;
  int64_t silent_entered = 0;
  for (size_t i : in) {
    const RankState& s = *all[view.ranks[i]];
    if (!s.issuer.has_value() || s.issuer->last_event_ns == 0) continue;
    if (silent == nullptr || s.issuer->last_event_ns < silent->last_event_ns) {
      silent = &*s.issuer;
      silent_entered = view.state[i]->last_call.entered_ns;
      v.rank = view.ranks[i];
    }
  }
  if (silent != nullptr && silent->last_event_ns < last_entry &&
      silent_entered < last_entry) {
    std::vector<std::string> inside = silent->scopes;
    inside.push_back(absl::StrCat(call.kind, " #", top));
    v.sentence = absl::StrFormat(
        "%severy rank entered it; rank %d's %s has recorded nothing for "
        "%.1f s, inside %s",
        lead, v.rank, ThreadName(*silent),
        Seconds(now_ns - silent->last_event_ns), ScopePath(inside));
    return v;
  }
  v.rank = -1;
  v.sentence = absl::StrCat(lead,
                            "every rank entered it and none has finished; no "
                            "rank's issuing thread went silent before the "
                            "others entered");
  return v;
}

}  // namespace

void TrimRankState(RankState& state) {
  if (static_cast<int>(state.groups.size()) > DoctorLimits::kMaxGroups) {
    state.groups.resize(DoctorLimits::kMaxGroups);
  }
  for (GroupState& g : state.groups) {
    Cap(g.group);
    Cap(g.last_call.kind);
    Cap(g.last_call.dtype);
    Cap(g.last_call.op);
    TrimScopes(g.last_call.scopes);
  }
  if (state.issuer.has_value()) TrimScopes(state.issuer->scopes);
}

std::string Verdict::key() const {
  return absl::StrCat(static_cast<int>(kind), "/", group, "#", sequence, "/",
                      rank);
}

std::string_view VerdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kHealthy:
      return "healthy";
    case VerdictKind::kStalled:
      return "stalled";
    case VerdictKind::kDesynced:
      return "desynced";
    case VerdictKind::kDead:
      return "dead";
  }
  return "?";
}

std::string ScopePath(const std::vector<std::string>& scopes) {
  return scopes.empty() ? "(no open scope)" : absl::StrJoin(scopes, " > ");
}

Verdict JudgeJob(const std::vector<std::optional<RankState>>& ranks,
                 int64_t now_ns, const StallPolicy& policy) {
  // Until every rank has said where it is, nothing can be judged.
  for (const auto& r : ranks) {
    if (!r.has_value()) return {};
  }
  std::vector<std::string> names;
  for (const auto& r : ranks) {
    for (const GroupState& g : r->groups) {
      if (std::find(names.begin(), names.end(), g.group) == names.end()) {
        names.push_back(g.group);
      }
    }
  }
  std::vector<GroupView> views;
  for (const std::string& name : names) {
    GroupView view;
    view.name = name;
    for (size_t r = 0; r < ranks.size(); ++r) {
      view.ranks.push_back(static_cast<int>(r));
      const GroupState* found = nullptr;
      for (const GroupState& g : ranks[r]->groups) {
        if (g.group == name) found = &g;
      }
      view.state.push_back(found);
    }
    views.push_back(std::move(view));
  }
  for (const GroupView& view : views) {
    if (auto v = Desync(view)) return *v;
  }
  for (const GroupView& view : views) {
    if (auto v = Stall(view, ranks, now_ns, policy)) return *v;
  }
  return {};
}

std::string LastCollectiveClause(const RankState& state, int64_t now_ns) {
  const GroupState* last = nullptr;
  for (const GroupState& g : state.groups) {
    if (g.last_entered < 0) continue;
    if (last == nullptr ||
        g.last_call.entered_ns > last->last_call.entered_ns) {
      last = &g;
    }
  }
  if (last == nullptr) return "";
  const std::string what =
      absl::StrCat(last->last_call.kind, " #", last->last_entered, " of group ",
                   last->group);
  if (last->last_finished >= last->last_entered) {
    return absl::StrCat(what, ", finished");
  }
  return absl::StrFormat("%s, in flight for %.1f s", what,
                         Seconds(now_ns - last->last_call.entered_ns));
}

}  // namespace podscope::job
