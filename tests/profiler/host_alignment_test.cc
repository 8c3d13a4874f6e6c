// The host alignment on synthetic pods whose truth is known: the Profile
// call's interval always holds the truth, the collective fit recovers
// offsets between hosts within microseconds whatever a host's network,
// and every stated uncertainty bounds the real error; a fit the evidence
// does not support is not used.
#include "src/capture/host_alignment.h"

#include <cstdlib>

#include "gtest/gtest.h"
#include "synthetic_pod.h"

namespace podscope::profiler::internal {
namespace {

using testing::MakeSyntheticPod;
using testing::PodShape;

TEST(HostAlignment, RpcIntervalsHoldTheTruth) {
  const auto pod = MakeSyntheticPod({});
  const auto aligned = AlignHosts(pod.inputs, {.method = AlignMethod::kRpc});
  for (size_t h = 0; h < aligned.size(); ++h) {
    EXPECT_EQ(aligned[h].method, AlignMethod::kRpc);
    EXPECT_LE(std::llabs(aligned[h].offset_ns - pod.truth[h]),
              aligned[h].uncertainty_ns)
        << "host " << h;
  }
  // The slow host's interval is the widest: its network is in it.
  EXPECT_GT(aligned[3].uncertainty_ns, 5'000'000);
}

TEST(HostAlignment, CollectivesRecoverOffsetsBetweenHostsWithinMicroseconds) {
  const auto pod = MakeSyntheticPod({});
  const auto aligned = AlignHosts(pod.inputs);
  for (size_t h = 0; h < aligned.size(); ++h) {
    ASSERT_EQ(aligned[h].method, AlignMethod::kCollectives) << aligned[h].note;
    const int64_t error = (aligned[h].offset_ns - aligned[0].offset_ns) -
                          (pod.truth[h] - pod.truth[0]);
    EXPECT_LE(std::llabs(error), 5'000) << "host " << h;
    EXPECT_LE(std::llabs(error), aligned[h].relative_uncertainty_ns +
                                     aligned[0].relative_uncertainty_ns)
        << "host " << h;
    EXPECT_LE(std::llabs(aligned[h].offset_ns - pod.truth[h]),
              aligned[h].uncertainty_ns)
        << "host " << h;
    EXPECT_EQ(aligned[h].collectives, 200);
  }
}

TEST(HostAlignment, ACollectiveOneHostWaitedOutIsLeftOut) {
  auto pod = MakeSyntheticPod({.hosts = 4, .collectives = 20, .jitter_ns = 0});
  // Host 2 ends collective 5 two milliseconds late (it straggled).
  pod.inputs[2].collective_ends[5].second += 2'000'000;
  const auto aligned = AlignHosts(pod.inputs);
  ASSERT_EQ(aligned[2].method, AlignMethod::kCollectives);
  EXPECT_EQ(aligned[2].collectives, 19);
  const int64_t error = (aligned[2].offset_ns - aligned[0].offset_ns) -
                        (pod.truth[2] - pod.truth[0]);
  EXPECT_LE(std::llabs(error), 100);
}

TEST(HostAlignment, TooFewCommonCollectivesFallBackToTheCall) {
  auto pod = MakeSyntheticPod({.hosts = 3, .collectives = 2});
  const auto aligned = AlignHosts(pod.inputs);
  for (const HostAlignment& a : aligned) {
    EXPECT_EQ(a.method, AlignMethod::kRpc);
    EXPECT_NE(a.note.find("the fit needs 3"), std::string::npos) << a.note;
  }
}

TEST(HostAlignment, AFitThatContradictsTheCallsIsNotUsed) {
  auto pod = MakeSyntheticPod({.hosts = 3, .collectives = 10});
  // Host 1's collectives are another op's, 50 ms apart from the others':
  // no offset fits both them and the calls.
  for (auto& [key, end] : pod.inputs[1].collective_ends) end += 50'000'000;
  const auto aligned = AlignHosts(pod.inputs);
  for (size_t h = 0; h < aligned.size(); ++h) {
    EXPECT_EQ(aligned[h].method, AlignMethod::kRpc);
    EXPECT_NE(aligned[h].note.find("contradicts"), std::string::npos);
    EXPECT_LE(std::llabs(aligned[h].offset_ns - pod.truth[h]),
              aligned[h].uncertainty_ns);
  }
}

TEST(HostAlignment, ATraceLongerThanTheCallBoundsNothing) {
  AlignInput in;
  in.wallclock_offset_ns = 42;
  in.has_rpc = true;
  in.rpc_lo_ns = 10;
  in.rpc_hi_ns = 5;
  const auto aligned = AlignHosts({in});
  EXPECT_EQ(aligned[0].method, AlignMethod::kWallclock);
  EXPECT_EQ(aligned[0].offset_ns, 42);
  EXPECT_EQ(aligned[0].uncertainty_ns, -1);
  EXPECT_NE(aligned[0].note.find("longer than the Profile call"),
            std::string::npos);
}

}  // namespace
}  // namespace podscope::profiler::internal
