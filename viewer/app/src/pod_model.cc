#include "pod_model.h"

#include <algorithm>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "time_format.h"

namespace podscope::viewer::app {
namespace tf = trace_format;

namespace {

int64_t Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The store's string ids whose text contains `needle`, ignoring case.
std::vector<bool> NamesContaining(const TraceStore& store,
                                  std::string_view needle) {
  std::vector<bool> out(store.string_count());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] =
        absl::AsciiStrToLower(std::string(store.str(static_cast<StringId>(i))))
            .find(needle) != std::string::npos;
  }
  return out;
}

}  // namespace

PodModel BuildPodModel(const TraceStore& store) {
  PodModel m;
  const std::vector<bool> is_step = NamesContaining(store, "step");
  const std::vector<bool> is_compile = NamesContaining(store, "compile");
  for (const ProcessInfo& p : store.processes()) {
    PodRank r;
    r.process = p.id;
    r.rank = p.process_index;
    r.label = p.process_index >= 0 ? absl::StrCat("rank ", p.process_index)
                                   : absl::StrCat(p.host_name, " ", p.pid);
    for (TrackId t : p.tracks) {
      const SliceColumns& c = store.data(t).slices;
      // The outermost matching slices: a match at depth d counts unless a
      // match of a lower depth encloses it.
      std::vector<std::pair<int64_t, int64_t>> taken;  // covered spans
      for (uint32_t d = 0; d < c.depth_count(); ++d) {
        std::vector<std::pair<int64_t, int64_t>> added;
        for (uint32_t i = c.depth_begin(d); i < c.depth_end(d); ++i) {
          const StringId n = c.name(i);
          if (n < is_compile.size() && is_compile[n]) {
            m.compiles.push_back(
                {{t, tf::EventKind::kSlice, i},
                 absl::StrCat(r.label, " · ", std::string(store.str(n)), " · ",
                              FormatDuration(c.duration(i)))});
          }
          if (n >= is_step.size() || !is_step[n]) continue;
          const int64_t s = c.start(i), e = c.end(i);
          auto it = std::upper_bound(taken.begin(), taken.end(),
                                     std::make_pair(s, INT64_MAX));
          if (it != taken.begin() && std::prev(it)->second >= e) continue;
          r.steps.push_back({{t, tf::EventKind::kSlice, i}, s, e - s});
          added.push_back({s, e});
        }
        taken.insert(taken.end(), added.begin(), added.end());
        std::sort(taken.begin(), taken.end());
      }
    }
    if (r.steps.empty()) continue;
    std::sort(r.steps.begin(), r.steps.end(),
              [](const PodStep& a, const PodStep& b) {
                return a.start_ns < b.start_ns;
              });
    std::vector<int64_t> d;
    for (const PodStep& s : r.steps) d.push_back(s.duration_ns);
    r.median_ns = Median(d);
    m.rows = std::max(m.rows, r.steps.size());
    m.ranks.push_back(std::move(r));
  }
  std::stable_sort(
      m.ranks.begin(), m.ranks.end(),
      [](const PodRank& a, const PodRank& b) { return a.rank < b.rank; });
  for (size_t k = 0; k < m.rows; ++k) {
    std::vector<int64_t> row;
    for (const PodRank& r : m.ranks) {
      if (k < r.steps.size()) row.push_back(r.steps[k].duration_ns);
    }
    m.row_median_ns.push_back(Median(row));
  }
  std::sort(m.compiles.begin(), m.compiles.end(),
            [&](const auto& a, const auto& b) {
              return store.StartOf(a.event) < store.StartOf(b.event);
            });
  // Collectives (slices with a collective_id): the ranks that reach one
  // first wait in it for the last, so the straggler is the rank whose
  // collectives take the least time.
  const auto key = store.FindString("collective_id");
  std::vector<int64_t> waited(m.ranks.size(), 0);
  std::optional<EventRef> longest_wait;
  int64_t longest = -1;
  bool any_collective = false;
  for (size_t i = 0; key && i < m.ranks.size(); ++i) {
    for (TrackId t : store.processes()[m.ranks[i].process].tracks) {
      for (const tf::EventArgs& a : store.data(t).args) {
        if (a.kind != tf::EventKind::kSlice) continue;
        const bool has =
            std::any_of(a.args.begin(), a.args.end(),
                        [&](const tf::Arg& arg) { return arg.key == *key; });
        if (!has) continue;
        any_collective = true;
        const EventRef e{t, a.kind, a.index};
        waited[i] += store.DurationOf(e);
      }
    }
  }
  if (any_collective && m.ranks.size() >= 2) {
    size_t slow = 0;
    for (size_t i = 1; i < m.ranks.size(); ++i) {
      if (waited[i] < waited[slow]) slow = i;
    }
    std::vector<int64_t> others;
    for (size_t i = 0; i < m.ranks.size(); ++i) {
      if (i != slow) others.push_back(waited[i]);
    }
    const int64_t typical = Median(others);
    const int64_t steps = static_cast<int64_t>(std::max<size_t>(m.rows, 1));
    if (typical > 0 && waited[slow] * 100 <= typical * 95) {
      m.straggler = slow;
      // The evidence: the longest wait of another rank in a collective.
      for (size_t i = 0; i < m.ranks.size(); ++i) {
        if (i == slow) continue;
        for (TrackId t : store.processes()[m.ranks[i].process].tracks) {
          for (const tf::EventArgs& a : store.data(t).args) {
            if (a.kind != tf::EventKind::kSlice) continue;
            for (const tf::Arg& arg : a.args) {
              if (arg.key != *key) continue;
              const EventRef e{t, a.kind, a.index};
              if (store.DurationOf(e) > longest) {
                longest = store.DurationOf(e);
                longest_wait = e;
              }
            }
          }
        }
      }
      m.evidence = longest_wait;
      m.verdict = absl::StrCat(
          m.ranks[slow].label, " is the straggler: its collectives took ",
          FormatDuration(waited[slow] / steps), " a step against ",
          FormatDuration(typical / steps),
          " on the other ranks, which wait for it");
      return m;
    }
  }
  if (m.ranks.size() >= 2) {
    size_t slow = 0;
    for (size_t i = 1; i < m.ranks.size(); ++i) {
      if (m.ranks[i].median_ns > m.ranks[slow].median_ns) slow = i;
    }
    std::vector<int64_t> others;
    for (size_t i = 0; i < m.ranks.size(); ++i) {
      if (i != slow) others.push_back(m.ranks[i].median_ns);
    }
    const int64_t typical = Median(others);
    const PodRank& r = m.ranks[slow];
    if (typical > 0 && r.median_ns * 100 >= typical * 105) {
      m.straggler = slow;
      const PodStep* worst = &r.steps.front();
      for (const PodStep& s : r.steps) {
        if (s.duration_ns > worst->duration_ns) worst = &s;
      }
      m.evidence = worst->event;
      m.verdict =
          absl::StrCat(r.label, " is the straggler: median step ",
                       FormatDuration(r.median_ns), " against ",
                       FormatDuration(typical), " on the other ranks (+",
                       (r.median_ns - typical) * 100 / typical, " %)");
    } else {
      m.verdict = absl::StrCat(
          "No straggler: every rank's median step is "
          "within 5 % of the others' (",
          FormatDuration(typical), ")");
    }
  }
  return m;
}

std::vector<EventRef> CollectivePeers(const TraceStore& store,
                                      const EventRef& event) {
  std::vector<EventRef> out;
  const auto key = store.FindString("collective_id");
  if (!key) return out;
  auto id_of = [&](const tf::EventArgs& a) -> std::optional<uint64_t> {
    for (const tf::Arg& arg : a.args) {
      if (arg.key != *key) continue;
      if (const auto* s = std::get_if<tf::StringId>(&arg.value)) return s->id;
      if (const auto* i = std::get_if<int64_t>(&arg.value)) {
        return static_cast<uint64_t>(*i) | (uint64_t{1} << 63);
      }
    }
    return std::nullopt;
  };
  const tf::EventArgs* mine = store.FindArgs(event);
  if (mine == nullptr) return out;
  const auto id = id_of(*mine);
  if (!id) return out;
  for (const TrackInfo& t : store.tracks()) {
    for (const tf::EventArgs& a : store.data(t.id).args) {
      if (a.kind != tf::EventKind::kSlice) continue;
      if (id_of(a) == id) out.push_back({t.id, a.kind, a.index});
    }
  }
  return out;
}

}  // namespace podscope::viewer::app
