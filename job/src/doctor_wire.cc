// doctor.h's states to and from the coordination protocol, bounded.

#include "src/doctor_wire.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace podscope::job::internal {
namespace pb = ::podscope::job::coordination;
namespace {

absl::Status TooBig(const std::string& field, size_t got, size_t limit) {
  return absl::InvalidArgumentError(absl::StrCat(
      "rank state: ", field, " has ", got, ", at most ", limit, " allowed"));
}

absl::Status CheckString(const std::string& field, const std::string& s) {
  if (s.size() > DoctorLimits::kMaxString) {
    return TooBig(absl::StrCat(field, " (bytes)"), s.size(),
                  DoctorLimits::kMaxString);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Scopes(
    const std::string& field,
    const google::protobuf::RepeatedPtrField<std::string>& in) {
  if (in.size() > DoctorLimits::kMaxScopes) {
    return TooBig(field, in.size(), DoctorLimits::kMaxScopes);
  }
  std::vector<std::string> out;
  for (const std::string& s : in) {
    if (absl::Status st = CheckString(field, s); !st.ok()) return st;
    out.push_back(s);
  }
  return out;
}

}  // namespace

void ToProto(const RankState& state, pb::RankState* out) {
  out->set_step(state.step);
  out->set_taken_ns(state.taken_ns);
  for (const GroupState& g : state.groups) {
    pb::GroupState* pg = out->add_groups();
    pg->set_group(g.group);
    pg->set_last_entered(g.last_entered);
    pg->set_last_finished(g.last_finished);
    pg->set_median_ns(g.median_ns);
    pg->set_size(g.size);
    pb::CollectiveCall* c = pg->mutable_last_call();
    c->set_sequence(g.last_call.sequence);
    c->set_kind(g.last_call.kind);
    c->set_dtype(g.last_call.dtype);
    c->set_count(g.last_call.count);
    c->set_op(g.last_call.op);
    c->set_root(g.last_call.root);
    for (const std::string& s : g.last_call.scopes) c->add_scopes(s);
    c->set_entered_ns(g.last_call.entered_ns);
    c->set_finished_ns(g.last_call.finished_ns);
  }
  if (state.issuer.has_value()) {
    pb::IssuerState* t = out->mutable_issuer();
    t->set_tid(state.issuer->tid);
    t->set_main_thread(state.issuer->main_thread);
    for (const std::string& s : state.issuer->scopes) t->add_scopes(s);
    t->set_innermost_since_ns(state.issuer->innermost_since_ns);
    t->set_last_event_ns(state.issuer->last_event_ns);
  }
}

absl::StatusOr<RankState> FromProto(const pb::RankState& in) {
  if (const size_t bytes = in.ByteSizeLong();
      bytes > DoctorLimits::kMaxStateBytes) {
    return TooBig("the state (bytes)", bytes, DoctorLimits::kMaxStateBytes);
  }
  if (in.groups_size() > DoctorLimits::kMaxGroups) {
    return TooBig("groups", in.groups_size(), DoctorLimits::kMaxGroups);
  }
  RankState out;
  out.step = in.step();
  out.taken_ns = in.taken_ns();
  for (const pb::GroupState& pg : in.groups()) {
    const pb::CollectiveCall& c = pg.last_call();
    for (const std::string* s : {&pg.group(), &c.kind(), &c.dtype(), &c.op()}) {
      if (absl::Status st = CheckString("a group's name or call", *s);
          !st.ok()) {
        return st;
      }
    }
    GroupState g;
    g.group = pg.group();
    g.last_entered = pg.last_entered();
    g.last_finished = pg.last_finished();
    g.median_ns = pg.median_ns();
    g.size = pg.size();
    g.last_call.sequence = c.sequence();
    g.last_call.kind = c.kind();
    g.last_call.dtype = c.dtype();
    g.last_call.count = c.count();
    g.last_call.op = c.op();
    g.last_call.root = c.root();
    auto scopes = Scopes("a call's scopes", c.scopes());
    if (!scopes.ok()) return scopes.status();
    g.last_call.scopes = *std::move(scopes);
    g.last_call.entered_ns = c.entered_ns();
    g.last_call.finished_ns = c.finished_ns();
    out.groups.push_back(std::move(g));
  }
  if (in.has_issuer()) {
    IssuerState t;
    t.tid = in.issuer().tid();
    t.main_thread = in.issuer().main_thread();
    auto scopes = Scopes("the issuing thread's scopes", in.issuer().scopes());
    if (!scopes.ok()) return scopes.status();
    t.scopes = *std::move(scopes);
    t.innermost_since_ns = in.issuer().innermost_since_ns();
    t.last_event_ns = in.issuer().last_event_ns();
    out.issuer = std::move(t);
  }
  return out;
}

}  // namespace podscope::job::internal
