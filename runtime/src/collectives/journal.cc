// The collective journal (journal.h): a fixed ring of entries and per-group
// counters under one mutex, taken twice per collective.

#include "collectives/journal.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "podscope/base/json.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/scope_stack.h"

namespace podscope::runtime::internal {
namespace {

constexpr size_t kMaxGroupChars = 64;

struct Entry {
  char group[kMaxGroupChars] = {};
  uint8_t group_size = 0;
  uint64_t sequence = 0;
  std::string_view kind, dtype, op;
  int64_t count = -1;
  int root = -1;
  IssueSite site;
  int64_t entered_ns = 0;
  int64_t finished_ns = 0;  // 0 while in flight
  bool ok = true;
  std::string_view group_view() const { return {group, group_size}; }
};

struct Durations {
  std::array<int64_t, CollectiveJournal::kDurations> ns = {};
  int size = 0, next = 0;
  void Add(int64_t d) {
    ns[next] = d;
    next = (next + 1) % static_cast<int>(ns.size());
    size = std::min<int>(size + 1, static_cast<int>(ns.size()));
  }
  int64_t Median() const {
    if (size == 0) return 0;
    std::array<int64_t, CollectiveJournal::kDurations> sorted = ns;
    std::nth_element(sorted.begin(), sorted.begin() + size / 2,
                     sorted.begin() + size);
    return sorted[size / 2];
  }
};

struct Group {
  int size = 0;
  int64_t last_entered = -1;
  int64_t last_finished = -1;
  uint64_t last_token = 0;  // the entry of last_entered
  // By kind (a literal's data pointer: few distinct kinds).
  absl::flat_hash_map<const char*, Durations> durations;
};

std::vector<std::string> ScopeNames(const IssueSite& site) {
  std::vector<std::string> out;
  for (int i = 0; i < site.depth; ++i) {
    out.push_back(profiler::ScopeName(site.scope_ids[i]));
  }
  return out;
}

}  // namespace

struct CollectiveJournal::Impl {
  mutable std::mutex mu;
  std::array<Entry, kRingEntries> ring;
  uint64_t next_token = 1;  // token t lives at ring[t % kRingEntries]
  absl::flat_hash_map<std::string, Group> groups;
  int64_t last_issuer_tid = 0;
  std::atomic<int64_t> step{-1};

  const Entry* Find(uint64_t token) const {
    if (token == 0 || token >= next_token ||
        next_token - token > static_cast<uint64_t>(kRingEntries)) {
      return nullptr;
    }
    return &ring[token % kRingEntries];
  }
};

IssueSite IssueSite::Here() {
  IssueSite site;
  site.tid = profiler::CurrentThreadId();
  site.depth = profiler::CaptureScopeIds(site.scope_ids, kMaxScopes);
  return site;
}

CollectiveJournal& CollectiveJournal::Get() {
  static auto* journal = new CollectiveJournal();
  return *journal;
}

CollectiveJournal::Impl& CollectiveJournal::impl() const {
  static auto* impl = new Impl();
  return *impl;
}

uint64_t CollectiveJournal::Enter(const JournalCall& call,
                                  const IssueSite& site) {
  const int64_t now = profiler::ProfilerNowNs();
  Impl& m = impl();
  std::lock_guard<std::mutex> lock(m.mu);
  const uint64_t token = m.next_token++;
  Entry& e = m.ring[token % kRingEntries];
  e.group_size =
      static_cast<uint8_t>(std::min(call.group.size(), kMaxGroupChars));
  std::copy_n(call.group.data(), e.group_size, e.group);
  e.sequence = call.sequence;
  e.kind = call.kind;
  e.dtype = call.dtype;
  e.op = call.op;
  e.count = call.count;
  e.root = call.root;
  e.site = site;
  e.entered_ns = now;
  e.finished_ns = 0;
  e.ok = true;
  auto it = m.groups.find(absl::string_view(e.group, e.group_size));
  if (it == m.groups.end()) {
    it = m.groups.emplace(std::string(e.group_view()), Group()).first;
  }
  Group& g = it->second;
  g.size = call.group_size;
  g.last_entered = static_cast<int64_t>(call.sequence);
  g.last_token = token;
  m.last_issuer_tid = site.tid;
  return token;
}

void CollectiveJournal::Finish(uint64_t token, bool ok) {
  const int64_t now = profiler::ProfilerNowNs();
  Impl& m = impl();
  std::lock_guard<std::mutex> lock(m.mu);
  const Entry* found = m.Find(token);
  if (found == nullptr) return;
  Entry& e = m.ring[token % kRingEntries];
  e.finished_ns = now;
  e.ok = ok;
  auto it = m.groups.find(absl::string_view(e.group, e.group_size));
  if (it == m.groups.end()) return;
  Group& g = it->second;
  g.last_finished = std::max(g.last_finished, static_cast<int64_t>(e.sequence));
  g.durations[e.kind.data()].Add(now - e.entered_ns);
}

void CollectiveJournal::NoteStep(int64_t step) {
  std::atomic<int64_t>& current = impl().step;
  int64_t seen = current.load(std::memory_order_relaxed);
  while (step > seen && !current.compare_exchange_weak(
                            seen, step, std::memory_order_relaxed)) {
  }
}

std::string CollectiveJournal::KindName(std::string_view kind) {
  std::string out;
  for (size_t i = 0; i < kind.size(); ++i) {
    const char c = kind[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0) out.push_back('_');
      out.push_back(static_cast<char>(std::tolower(c)));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

job::RankState CollectiveJournal::Snapshot(int64_t offset_ns) const {
  job::RankState state;
  int64_t issuer_tid = 0;
  {
    const Impl& m = impl();
    std::lock_guard<std::mutex> lock(m.mu);
    for (const auto& [name, g] : m.groups) {
      const Entry* e = m.Find(g.last_token);
      if (e == nullptr) continue;
      job::GroupState out;
      out.group = name;
      out.last_entered = g.last_entered;
      out.last_finished = g.last_finished;
      out.size = g.size;
      job::CollectiveCall& c = out.last_call;
      c.sequence = static_cast<int64_t>(e->sequence);
      c.kind = KindName(e->kind);
      c.dtype = std::string(e->dtype);
      c.count = e->count;
      c.op = std::string(e->op);
      c.root = e->root;
      c.scopes = ScopeNames(e->site);
      c.entered_ns = e->entered_ns + offset_ns;
      c.finished_ns = e->finished_ns == 0 ? 0 : e->finished_ns + offset_ns;
      if (auto d = g.durations.find(e->kind.data()); d != g.durations.end()) {
        out.median_ns = d->second.Median();
      }
      state.groups.push_back(std::move(out));
    }
    issuer_tid = m.last_issuer_tid;
  }
  // The groups most recently entered first: those are kept when trimmed.
  std::sort(state.groups.begin(), state.groups.end(), [](auto& a, auto& b) {
    return a.last_call.entered_ns > b.last_call.entered_ns;
  });
  const int64_t main_tid = getpid();
  std::optional<profiler::ThreadScopes> t =
      profiler::ReadThreadScopes(issuer_tid != 0 ? issuer_tid : main_tid);
  job::IssuerState issuer;
  issuer.tid = issuer_tid != 0 ? issuer_tid : main_tid;
  issuer.main_thread = issuer.tid == main_tid;
  if (t.has_value()) {
    issuer.scopes = t->scopes;
    if (t->innermost_since_ns != 0) {
      issuer.innermost_since_ns = t->innermost_since_ns + offset_ns;
    }
    if (t->last_event_ns != 0) {
      issuer.last_event_ns = t->last_event_ns + offset_ns;
    }
  }
  state.issuer = std::move(issuer);
  state.step = impl().step.load(std::memory_order_relaxed);
  state.taken_ns = profiler::ProfilerNowNs() + offset_ns;
  return state;
}

namespace {

// At most CollectiveJournal::kMaxFileString bytes, cut before a UTF-8
// continuation byte.
std::string FileString(std::string_view s) {
  size_t n = std::min(s.size(), CollectiveJournal::kMaxFileString);
  if (n < s.size()) {
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  }
  return std::string(s.substr(0, n));
}

void ScopesField(base::JsonWriter& w, const std::vector<std::string>& scopes) {
  w.Key("scopes").BeginArray(base::JsonLayout::kOneLine);
  for (const std::string& s : scopes) w.String(FileString(s));
  w.EndArray();
}

void HeaderFields(base::JsonWriter& w,
                  const CollectiveJournal::FileHeader& header) {
  w.Field("format", "podscope.doctor.journal");
  w.Field("version", static_cast<int64_t>(CollectiveJournal::kFileVersion));
  w.Field("rank", static_cast<int64_t>(header.rank));
  w.Field("pid", static_cast<int64_t>(getpid()));
  w.Field("host", FileString(header.host));
  w.Field("clock", "job");
  if (header.verdict != nullptr) {
    const job::Verdict& v = *header.verdict;
    w.Field("verdict", v.sentence);
    w.Field("verdict_kind", job::VerdictName(v.kind));
    w.Field("verdict_rank", static_cast<int64_t>(v.rank));
    w.Field("verdict_group", FileString(v.group));
    w.Field("verdict_sequence", v.sequence);
  }
  if (header.now == nullptr) return;
  w.Field("written_ns", header.now->taken_ns);
  if (!header.now->issuer.has_value()) return;
  const job::IssuerState& t = *header.now->issuer;
  w.Key("where").BeginObject(base::JsonLayout::kOneLine);
  w.Field("tid", t.tid);
  w.Field("main_thread", t.main_thread);
  ScopesField(w, t.scopes);
  if (t.innermost_since_ns != 0) {
    w.Field("innermost_since_ns", t.innermost_since_ns);
  }
  if (t.last_event_ns != 0) w.Field("last_event_ns", t.last_event_ns);
  w.EndObject();
}

}  // namespace

std::string CollectiveJournal::ToJson(int64_t offset_ns,
                                      const FileHeader& header) const {
  std::string out;
  base::JsonWriter w(&out);
  w.BeginObject();
  HeaderFields(w, header);
  w.Key("entries").BeginArray();
  const Impl& m = impl();
  std::lock_guard<std::mutex> lock(m.mu);
  const uint64_t first =
      m.next_token > kRingEntries ? m.next_token - kRingEntries : 1;
  for (uint64_t t = first; t < m.next_token; ++t) {
    const Entry& e = m.ring[t % kRingEntries];
    w.BeginObject(base::JsonLayout::kOneLine);
    w.Field("group", e.group_view());
    w.Field("sequence", static_cast<int64_t>(e.sequence));
    w.Field("collective_id",
            std::string(e.group_view()) + "#" + std::to_string(e.sequence));
    w.Field("kind", KindName(e.kind));
    if (!e.dtype.empty()) w.Field("dtype", e.dtype);
    if (e.count >= 0) w.Field("count", e.count);
    if (!e.op.empty()) w.Field("op", e.op);
    if (e.root >= 0) w.Field("root", static_cast<int64_t>(e.root));
    ScopesField(w, ScopeNames(e.site));
    w.Field("tid", e.site.tid);
    w.Field("entered_ns", e.entered_ns + offset_ns);
    if (e.finished_ns != 0) {
      w.Field("finished_ns", e.finished_ns + offset_ns);
      w.Field("ok", e.ok);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  return out;
}

}  // namespace podscope::runtime::internal
