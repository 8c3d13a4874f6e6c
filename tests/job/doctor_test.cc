// The job doctor's judgement from the ranks' heartbeat states: every
// verdict with its sentence written out by hand, and the bounds a rank's
// state is held to on the wire.
#include "podscope/job/doctor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "google/protobuf/unknown_field_set.h"
#include "src/doctor_wire.h"

namespace podscope::job {
namespace {

constexpr int64_t kS = 1'000'000'000;

CollectiveCall AllReduce(int64_t seq, int64_t entered, int64_t finished = 0) {
  CollectiveCall c;
  c.sequence = seq;
  c.kind = "all_reduce";
  c.dtype = "f32";
  c.count = 16777216;
  c.op = "sum";
  c.scopes = {"train_step", "backward", "grad_sync"};
  c.entered_ns = entered;
  c.finished_ns = finished;
  return c;
}

RankState Rank(const CollectiveCall& call, bool finished, int64_t taken) {
  RankState r;
  r.step = 7;
  GroupState g;
  g.group = "world";
  g.last_entered = call.sequence;
  g.last_finished = finished ? call.sequence : call.sequence - 1;
  g.last_call = call;
  g.median_ns = 1'000'000;  // 1 ms: 20x is far below the 10 s floor
  r.groups.push_back(g);
  IssuerState t;
  t.tid = 100;
  t.main_thread = true;
  t.scopes = call.scopes;
  t.innermost_since_ns = call.entered_ns;
  t.last_event_ns = call.entered_ns;
  r.issuer = t;
  r.taken_ns = taken;
  return r;
}

// Ranks 0, 1, 3 entered #418 at 100 s; rank 2 finished #417 and has been
// reading a batch since 99.8 s.
std::vector<std::optional<RankState>> OneRankInDataLoading(int64_t now) {
  std::vector<std::optional<RankState>> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back(Rank(AllReduce(418, 100 * kS), false, now));
  }
  RankState late =
      Rank(AllReduce(417, 99 * kS, 99 * kS + 5'000'000), true, now);
  late.issuer->scopes = {"train_step", "data_loading", "read_batch"};
  late.issuer->innermost_since_ns = 99 * kS + 800'000'000;
  late.issuer->last_event_ns = late.issuer->innermost_since_ns;
  ranks[2] = late;
  return ranks;
}

TEST(Doctor, RankStuckInAScopeIsNamedWithWhereItIs) {
  const int64_t now = 112 * kS + 100'000'000;
  const Verdict v = JudgeJob(OneRankInDataLoading(now), now, {});
  EXPECT_EQ(v.kind, VerdictKind::kStalled);
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.sentence,
            "all_reduce #418 of group world (f32 x 16777216, sum) has waited "
            "12.1 s: ranks 0, 1, 3 entered it from train_step > backward > "
            "grad_sync; rank 2 has not \xE2\x80\x94 it has been in train_step "
            "> data_loading > read_batch for 12.3 s (last collective: #417)");
}

TEST(Doctor, SlowRankBelowTheThresholdIsNotStalled) {
  const int64_t now = 109 * kS;  // 9 s: under the 10 s floor
  EXPECT_EQ(JudgeJob(OneRankInDataLoading(now), now, {}).kind,
            VerdictKind::kHealthy);
}

TEST(Doctor, ThresholdIsTwentyTimesTheMedianWhenThatIsLonger) {
  const int64_t now = 112 * kS + 100'000'000;
  auto ranks = OneRankInDataLoading(now);
  for (auto& r : ranks) r->groups[0].median_ns = kS;  // 20 s
  EXPECT_EQ(JudgeJob(ranks, now, {}).kind, VerdictKind::kHealthy);
  const int64_t later = 121 * kS;
  for (auto& r : ranks) r->taken_ns = later;
  EXPECT_EQ(JudgeJob(ranks, later, {}).kind, VerdictKind::kStalled);
}

TEST(Doctor, AnAbsurdMedianDoesNotOverflowTheThreshold) {
  const int64_t now = 112 * kS + 100'000'000;
  auto ranks = OneRankInDataLoading(now);
  ranks[0]->groups[0].median_ns = INT64_MAX;
  EXPECT_EQ(JudgeJob(ranks, now, {}).kind, VerdictKind::kHealthy);
}

TEST(Doctor, StateTakenBeforeTheThresholdCannotConvict) {
  const int64_t now = 112 * kS;
  auto ranks = OneRankInDataLoading(now);
  // Rank 2 last spoke before the threshold passed: it may have entered.
  ranks[2]->taken_ns = 105 * kS;
  EXPECT_EQ(JudgeJob(ranks, now, {}).kind, VerdictKind::kHealthy);
}

TEST(Doctor, RanksOutsideASmallerGroupAreNotMissing) {
  const int64_t now = 112 * kS + 100'000'000;
  // Group "trio" is ranks 0, 1 and 3 of the four: 0 and 1 wait in its #418
  // for rank 3; rank 2, not a member, is nobody's concern.
  auto ranks = OneRankInDataLoading(now);
  for (auto& r : ranks) {
    r->groups[0].group = "trio";
    r->groups[0].size = 3;
  }
  ranks[2]->groups.clear();
  ranks[3]->groups[0].last_entered = 417;
  ranks[3]->groups[0].last_finished = 417;
  ranks[3]->groups[0].last_call.sequence = 417;
  const Verdict v = JudgeJob(ranks, now, {});
  EXPECT_EQ(v.kind, VerdictKind::kStalled);
  EXPECT_EQ(v.rank, 3);
  EXPECT_THAT(v.sentence,
              ::testing::HasSubstr("ranks 0, 1 entered it from train_step > "
                                   "backward > grad_sync; rank 3 has not"));
  EXPECT_THAT(v.sentence, ::testing::Not(::testing::HasSubstr("rank 2")));
}

TEST(Doctor, DifferentCallsAtOneSequenceAreADesync) {
  const int64_t now = 101 * kS;
  std::vector<std::optional<RankState>> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back(Rank(AllReduce(418, 100 * kS), false, now));
  }
  CollectiveCall b;
  b.sequence = 418;
  b.kind = "broadcast";
  b.dtype = "f32";
  b.count = 1024;
  b.root = 0;
  b.scopes = {"eval", "sync_metrics"};
  b.entered_ns = 100 * kS;
  ranks[2] = Rank(b, false, now);
  const Verdict v = JudgeJob(ranks, now, {});
  EXPECT_EQ(v.kind, VerdictKind::kDesynced);
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.sentence,
            "desync at #418 of group world: ranks 0, 1, 3 called all_reduce "
            "(f32 x 16777216); rank 2 called broadcast (f32 x 1024, root 0) "
            "from eval > sync_metrics");
}

TEST(Doctor, EveryRankInsideButOneThreadSilentFirst) {
  const int64_t now = 115 * kS;
  std::vector<std::optional<RankState>> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(Rank(AllReduce(418, 102 * kS), false, now));
  }
  // Rank 2 entered first, then its main thread went silent while rank 1
  // was still on its way.
  ranks[2]->groups[0].last_call.entered_ns = 100 * kS;
  ranks[2]->issuer->last_event_ns = 100 * kS + 200'000'000;
  ranks[2]->issuer->scopes = {"train_step", "backward"};
  const Verdict v = JudgeJob(ranks, now, {});
  EXPECT_EQ(v.kind, VerdictKind::kStalled);
  EXPECT_EQ(v.rank, 2);
  EXPECT_EQ(v.sentence,
            "all_reduce #418 of group world (f32 x 16777216, sum) has waited "
            "15.0 s: every rank entered it; rank 2's main thread has recorded "
            "nothing for 14.8 s, inside train_step > backward > all_reduce "
            "#418");
}

TEST(Doctor, FinishedCollectiveIsHealthyHoweverOld) {
  const int64_t now = 500 * kS;
  std::vector<std::optional<RankState>> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(Rank(AllReduce(5, 100 * kS, 101 * kS), true, now));
  }
  EXPECT_EQ(JudgeJob(ranks, now, {}).kind, VerdictKind::kHealthy);
}

TEST(Doctor, DeadRankClauseNamesItsLastCollective) {
  RankState r = Rank(AllReduce(12, 100 * kS), false, 100 * kS);
  EXPECT_EQ(LastCollectiveClause(r, 103 * kS + 200'000'000),
            "all_reduce #12 of group world, in flight for 3.2 s");
  r.groups[0].last_finished = 12;
  EXPECT_EQ(LastCollectiveClause(r, 0),
            "all_reduce #12 of group world, finished");
}

TEST(Doctor, TrimKeepsTheInnermostScopesAndCapsStrings) {
  RankState r = Rank(AllReduce(1, 1), false, 1);
  r.issuer->scopes.clear();
  for (int i = 0; i < 12; ++i)
    r.issuer->scopes.push_back("s" + std::to_string(i));
  r.groups[0].group = std::string(500, 'g');
  for (int i = 0; i < 9; ++i) r.groups.push_back(r.groups[0]);
  TrimRankState(r);
  ASSERT_EQ(r.issuer->scopes.size(), size_t{DoctorLimits::kMaxScopes});
  EXPECT_EQ(r.issuer->scopes.front(), "\xE2\x80\xA6");
  EXPECT_EQ(r.issuer->scopes.back(), "s11");
  EXPECT_EQ(r.groups.size(), size_t{DoctorLimits::kMaxGroups});
  EXPECT_EQ(r.groups[0].group.size(), DoctorLimits::kMaxString);
}

// What a hostile rank may send: the coordinator parses a state within the
// limits and refuses one beyond them, naming the field.
TEST(DoctorWire, StateWithinTheLimitsRoundTrips) {
  RankState r = Rank(AllReduce(3, 5), false, 9);
  coordination::RankState wire;
  internal::ToProto(r, &wire);
  absl::StatusOr<RankState> back = internal::FromProto(wire);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->groups.at(0).last_call.scopes, r.groups[0].last_call.scopes);
  EXPECT_EQ(back->issuer->scopes, r.issuer->scopes);
  EXPECT_EQ(back->taken_ns, 9);
  // A typical state (one group, three scopes twice) is a few hundred bytes.
  EXPECT_LT(wire.ByteSizeLong(), 300u);
}

TEST(DoctorWire, StateBeyondTheLimitsIsRefusedNamingTheField) {
  const RankState r = Rank(AllReduce(3, 5), false, 9);
  coordination::RankState wire;
  internal::ToProto(r, &wire);

  coordination::RankState groups = wire;
  for (int i = 0; i < DoctorLimits::kMaxGroups; ++i) {
    *groups.add_groups() = wire.groups(0);
  }
  EXPECT_THAT(internal::FromProto(groups).status().message(),
              ::testing::HasSubstr("groups has 5, at most 4"));

  coordination::RankState scopes = wire;
  for (int i = 0; i < DoctorLimits::kMaxScopes; ++i) {
    scopes.mutable_issuer()->add_scopes("s");
  }
  EXPECT_THAT(internal::FromProto(scopes).status().message(),
              ::testing::HasSubstr("the issuing thread's scopes has 11"));

  coordination::RankState name = wire;
  name.mutable_groups(0)->set_group(std::string(65, 'g'));
  EXPECT_THAT(internal::FromProto(name).status().message(),
              ::testing::HasSubstr("has 65, at most 64"));

  // Within every count, but padded with a field the protocol does not
  // know: too many bytes in all.
  coordination::RankState big = wire;
  big.GetReflection()->MutableUnknownFields(&big)->AddLengthDelimited(
      99, std::string(5000, 'x'));
  EXPECT_THAT(internal::FromProto(big).status().message(),
              ::testing::HasSubstr("the state (bytes) has"));
}

}  // namespace
}  // namespace podscope::job
