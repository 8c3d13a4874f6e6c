// `podscope analyze --json`: the whole PodAnalysis as one JSON document.
#include <cmath>
#include <string>

#include "analyze_print.h"
#include "critical_path_print.h"
#include "podscope/base/json.h"
#include "podscope/viewer/analysis_labels.h"

namespace podscope::tools {
namespace {

using base::JsonWriter;
using viewer::PodAnalysis;

int32_t RankOf(const viewer::StepBreakdown& s, int r) {
  return r >= 0 && static_cast<size_t>(r) < s.ranks.size() ? s.ranks[r].rank
                                                           : -1;
}

void Steps(const PodAnalysis& a, JsonWriter& j) {
  const viewer::StepBreakdown& s = a.steps;
  j.Key("ranks").BeginArray();
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const viewer::RankInfo& info = s.ranks[r];
    const viewer::RankStepTotals& t = s.totals[r];
    j.BeginObject();
    j.Field("rank", info.rank).Field("host", info.host_name);
    j.Field("pid", info.pid);
    j.Field("steps", t.steps).Field("step_total_ns", t.total_ns);
    j.Field("step_median_ns", t.median_ns).Field("step_max_ns", t.max_ns);
    j.Field("slowest_in_steps", t.slowest_count);
    j.Key("category_ns").BeginObject();
    for (int c = 0; c < viewer::kStepCategoryCount; ++c) {
      j.Field(viewer::StepCategoryName(static_cast<viewer::StepCategory>(c)),
              t.category_ns[c]);
    }
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();
  j.Key("steps").BeginObject();
  j.Field("matched_by", s.matched_by_number ? "number" : "order");
  j.Field("count", s.rows.size());
  j.Key("rows").BeginArray();
  for (const viewer::StepRow& row : s.rows) {
    j.BeginObject();
    j.Field("step", row.step);
    j.Field("slowest_rank", RankOf(s, row.slowest_rank));
    j.Field("spread_ns", row.spread_ns);
    j.Key("ranks").BeginArray();
    for (size_t r = 0; r < row.ranks.size(); ++r) {
      const viewer::StepCell& c = row.ranks[r];
      if (!c.present) {
        j.Null();
        continue;
      }
      j.BeginObject();
      j.Field("rank", RankOf(s, static_cast<int>(r)));
      j.Field("number", c.number);
      j.Field("start_ns", c.start_ns).Field("duration_ns", c.duration_ns);
      for (int k = 0; k < viewer::kStepCategoryCount; ++k) {
        j.Field(std::string(viewer::StepCategoryName(
                    static_cast<viewer::StepCategory>(k))) +
                    "_ns",
                c.category_ns[k]);
      }
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

// The verdict's test and the longest wait (infinite t and ratio, which JSON
// cannot spell, are null).
void StragglerTestJson(const viewer::StepBreakdown& st,
                       const viewer::StragglerReport& s, JsonWriter& j) {
  const viewer::StragglerTest& t = s.test;
  auto finite = [&](std::string_view key, double v) {
    j.Key(key);
    if (std::isfinite(v)) {
      j.Double(v);
    } else {
      j.Null();
    }
  };
  j.Key("straggler_test").BeginObject();
  j.Field("candidate", RankOf(st, t.candidate));
  j.Field("units", t.by_steps ? "steps" : "collectives");
  j.Field("unit_count", t.units);
  j.Field("mean_excess_ns", t.mean_excess_ns);
  finite("t", t.t);
  j.Field("p_value", t.p_value);
  finite("ratio", t.ratio);
  j.EndObject();
  j.Key("worst_wait");
  if (s.worst_wait < 0) {
    j.Null();
    return;
  }
  const viewer::JoinedCollective& w = s.collectives[s.worst_wait];
  j.BeginObject();
  j.Field("key", w.key).Field("name", w.name).Field("wait_ns", w.spread_ns);
  j.Field("step", w.step_row >= 0 ? st.rows[w.step_row].step : -1);
  j.EndObject();
}

void Stragglers(const PodAnalysis& a, JsonWriter& j) {
  const viewer::StragglerReport& s = a.stragglers;
  const viewer::StepBreakdown& st = a.steps;
  j.Key("collectives").BeginObject();
  j.Field("joined", s.collectives.size());
  j.Field("joined_by_id", s.joined_by_id);
  j.Field("joined_by_order", s.joined_by_order);
  j.Key("per_rank").BeginArray();
  for (const viewer::RankStraggle& r : s.ranks) {
    j.BeginObject();
    j.Field("rank", RankOf(st, r.rank)).Field("last_count", r.last_count);
    j.Field("late_by_ns", r.late_by_ns);
    j.Field("wait_caused_ns", r.wait_caused_ns);
    j.Field("waited_ns", r.waited_ns);
    j.EndObject();
  }
  j.EndArray();
  j.Key("list").BeginArray();
  for (const viewer::JoinedCollective& c : s.collectives) {
    j.BeginObject();
    j.Field("name", c.name).Field("key", c.key);
    j.Field("joined_by", c.joined_by_id ? "collective_id" : "order");
    j.Field("step", c.step_row >= 0 ? st.rows[c.step_row].step : -1);
    j.Field("last_rank", RankOf(st, c.last_rank));
    j.Field("late_by_ns", c.late_by_ns).Field("spread_ns", c.spread_ns);
    j.Field("wait_caused_ns", c.wait_caused_ns);
    j.Key("arrivals").BeginArray();
    for (const viewer::CollectiveArrival& x : c.arrivals) {
      j.BeginObject(base::JsonLayout::kOneLine);
      j.Field("rank", RankOf(st, x.rank)).Field("start_ns", x.start_ns);
      j.Field("duration_ns", x.duration_ns).Field("wait_ns", x.wait_ns);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.Field("verdict", viewer::StragglerVerdict(st, s));
  StragglerTestJson(st, s, j);
  j.Key("straggler");
  if (!s.straggler) {
    j.Null();
    return;
  }
  const viewer::Straggler& g = *s.straggler;
  j.BeginObject();
  j.Field("rank", RankOf(st, g.rank)).Field("last_count", g.last_count);
  j.Field("joined", g.joined).Field("wait_caused_ns", g.wait_caused_ns);
  j.Key("steps").BeginArray(base::JsonLayout::kOneLine);
  for (int64_t x : g.steps) j.Int(x);
  j.EndArray();
  j.Key("collectives").BeginArray();
  for (const auto& [name, count] : g.collectives) {
    j.BeginObject(base::JsonLayout::kOneLine);
    j.Field("name", name).Field("count", count);
    j.EndObject();
  }
  j.EndArray();
  j.Key("longer_scopes").BeginArray();
  for (const viewer::LongerScope& l : g.longer_scopes) {
    j.BeginObject();
    j.Field("name", l.name).Field("own_ns", l.own_ns);
    j.Field("others_median_ns", l.others_median_ns);
    j.Field("excess_ns", l.excess_ns());
    j.Key("steps").BeginArray(base::JsonLayout::kOneLine);
    for (int64_t x : l.steps) j.Int(x);
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void Compiles(const PodAnalysis& a, JsonWriter& j) {
  const viewer::CompileReport& c = a.compiles;
  j.Key("compiles").BeginObject();
  j.Field("count", c.compiles.size()).Field("hits", c.hits);
  j.Field("misses", c.misses).Field("late_misses", c.late_misses);
  j.Field("miss_ns", c.miss_ns);
  j.Key("list").BeginArray();
  for (const viewer::CompileEvent& e : c.compiles) {
    j.BeginObject();
    j.Field("rank", RankOf(a.steps, e.rank));
    j.Field("start_ns", e.start_ns).Field("duration_ns", e.duration_ns);
    j.Field("graph_hash", e.graph_hash);
    j.Key("cache_hit");
    if (e.cache_hit) {
      j.Bool(*e.cache_hit);
    } else {
      j.Null();
    }
    j.Field("signature", e.signature).Field("graph_ops", e.graph_ops);
    j.Field("step", e.step).Field("late", e.late);
    j.Field("stall_ns", e.stall_ns).Field("previous", e.previous);
    j.Key("changes").BeginArray();
    for (const std::string& x : e.changes) j.String(x);
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void Work(const std::vector<viewer::WorkEntry>& v, JsonWriter& j) {
  j.BeginArray();
  for (const viewer::WorkEntry& e : v) {
    j.BeginObject(base::JsonLayout::kOneLine);
    j.Field("host", e.host_name).Field("device", e.device_id);
    j.Field("name", e.name).Field("count", e.count);
    j.Field("self_ns", e.self_ns).Field("total_ns", e.total_ns);
    j.Field("step_share", e.step_share);
    j.EndObject();
  }
  j.EndArray();
}

void Roofline(const viewer::TraceStore& store,
              const std::vector<viewer::RooflineEntry>& v, JsonWriter& j) {
  j.BeginArray();
  for (const viewer::RooflineEntry& e : v) {
    j.BeginObject(base::JsonLayout::kOneLine);
    j.Field("host", e.host < store.hosts().size() ? store.hosts()[e.host].name
                                                  : std::string());
    j.Field("name", e.name).Field("count", e.count);
    j.Field("flops", e.flops).Field("bytes", e.bytes);
    j.Field("time_ns", e.time_ns).Field("gflops", e.gflops);
    j.Field("intensity", e.intensity).Field("bound_gflops", e.bound_gflops);
    j.Field("fraction_of_bound", e.fraction_of_bound);
    j.Field("memory_bound", e.memory_bound);
    j.EndObject();
  }
  j.EndArray();
}

}  // namespace

std::string AnalysisJson(const std::string& path,
                         const viewer::TraceStore& store, const PodAnalysis& a,
                         const viewer::CriticalPath* critical_path) {
  std::string out;
  JsonWriter j(&out);
  j.BeginObject();
  j.Field("path", path);
  j.Field("hosts", a.host_names.size());
  j.Field("processes", a.processes);
  j.Field("events", a.events);
  Steps(a, j);
  Stragglers(a, j);
  Compiles(a, j);
  j.Key("top").BeginObject();
  j.Key("device_ops");
  Work(a.top.device_ops, j);
  j.Key("host_scopes");
  Work(a.top.host_scopes, j);
  j.Key("overlap").BeginArray();
  for (const viewer::RankOverlap& o : a.top.overlap) {
    j.BeginObject(base::JsonLayout::kOneLine);
    j.Field("rank", RankOf(a.steps, o.rank));
    j.Field("collective_ns", o.collective_ns);
    j.Field("overlapped_ns", o.overlapped_ns).Field("overlap", o.overlap());
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.Key("ops").BeginObject();
  j.Key("peaks").BeginArray();
  for (const viewer::HostPeak& h : a.ops.peaks) {
    j.BeginObject(base::JsonLayout::kOneLine);
    j.Field("host", h.host_name).Field("peak_gflops", h.peak_gflops);
    j.Field("peak_gbps", h.peak_gbps).Field("source", h.source);
    j.Field("threads", h.threads);
    j.Field("recorded_gflops", h.recorded_gflops);
    j.Field("recorded_gbps", h.recorded_gbps);
    j.Field("understated", h.understated);
    j.EndObject();
  }
  j.EndArray();
  j.Key("by_kind");
  Roofline(store, a.ops.by_kind, j);
  j.Key("by_name");
  Roofline(store, a.ops.by_name, j);
  j.EndObject();
  j.Key("memory").BeginArray();
  for (const viewer::DeviceMemory& m : a.memory) {
    j.BeginObject();
    j.Field("rank", RankOf(a.steps, m.rank)).Field("host", m.host_name);
    j.Field("device", m.device_id);
    j.Field("source", m.from_allocations ? "allocations" : "counter");
    j.Field("peak_bytes", m.peak_bytes).Field("peak_ns", m.peak_ns);
    j.Field("allocations", m.allocations).Field("frees", m.frees);
    j.Field("live_count", m.live_count);
    j.Key("live_at_peak").BeginArray();
    for (const viewer::LiveBuffer& b : m.live_at_peak) {
      j.BeginObject(base::JsonLayout::kOneLine);
      j.Field("buffer_id", b.buffer_id).Field("bytes", b.bytes);
      j.Field("op", b.op).Field("scope", b.scope);
      j.Field("allocated_ns", b.allocated_ns);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  if (critical_path != nullptr) {
    j.Key("critical_path");
    CriticalPathJson(a.steps, *critical_path, j);
  }
  j.EndObject();

  return out;
}

}  // namespace podscope::tools
