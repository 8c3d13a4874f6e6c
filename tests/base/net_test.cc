// Addresses as users and peers write them: host:port, [v6]:port, loopback.
#include "podscope/base/net.h"

#include <gtest/gtest.h>

namespace podscope::base {
namespace {

TEST(Net, SplitsHostAndPort) {
  auto v4 = SplitHostPort("10.0.0.2:9012", "--x");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->first, "10.0.0.2");
  EXPECT_EQ(v4->second, 9012);
  auto v6 = SplitHostPort("[fe80::1]:29500", "--x");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->first, "fe80::1");
  EXPECT_EQ(v6->second, 29500);
  auto name = SplitHostPort("node-3.cluster:1", "--x");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->first, "node-3.cluster");
}

TEST(Net, BadAddressesNameWhatWasWrong) {
  for (const char* bad : {"nohost", ":9012", "h:", "h:0", "h:65536", "h:x",
                          "[::1]", "[::1]9012", "[::1:9012"}) {
    auto r = SplitHostPort(bad, "--rdzv_endpoint");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--rdzv_endpoint"), std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status();
  }
}

TEST(Net, JoinBracketsIpv6AndRoundTrips) {
  EXPECT_EQ(JoinHostPort("h1", 9012), "h1:9012");
  EXPECT_EQ(JoinHostPort("::1", 80), "[::1]:80");
  EXPECT_EQ(JoinHostPort("[::1]", 80), "[::1]:80");
  for (const char* host : {"127.0.0.1", "fe80::2", "example.org"}) {
    auto back = SplitHostPort(JoinHostPort(host, 4242), "x");
    ASSERT_TRUE(back.ok()) << host;
    EXPECT_EQ(back->first, host);
    EXPECT_EQ(back->second, 4242);
  }
}

TEST(Net, LoopbackHosts) {
  for (const char* h :
       {"localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "10.0.0.1", "::", "node1", "128.0.0.1",
                        "localhost.example.org", ""}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
}

TEST(Net, HostNameIsNeverEmpty) { EXPECT_FALSE(HostName().empty()); }

}  // namespace
}  // namespace podscope::base
