// Coordinators and registered clients for the tests of podscope::job.
#ifndef PODSCOPE_TESTS_JOB_JOB_TEST_UTIL_H_
#define PODSCOPE_TESTS_JOB_JOB_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "podscope/job/coordination.h"

namespace podscope::job {

inline std::unique_ptr<Coordinator> Start(const CoordinatorOptions& o) {
  auto c = StartCoordinator(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

inline std::unique_ptr<Coordinator> Start(
    int world_size, std::string token = "",
    absl::Duration dead_after = absl::Seconds(6)) {
  CoordinatorOptions o;
  o.world_size = world_size;
  o.token = std::move(token);
  o.dead_after = dead_after;
  return Start(o);
}

inline std::unique_ptr<CoordinationClient> Connect(
    const Coordinator& c, const std::string& token = "") {
  auto client = CoordinationClient::Create(c.address(), token);
  EXPECT_TRUE(client.ok()) << client.status();
  return *std::move(client);
}

// Registers ranks 0..n-1 concurrently (Register waits for all).
inline std::vector<std::unique_ptr<CoordinationClient>> RegisterAll(
    const Coordinator& c, int n, const std::string& token = "") {
  std::vector<std::unique_ptr<CoordinationClient>> clients;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) clients.push_back(Connect(c, token));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto result = clients[r]->Register(r, n, "host" + std::to_string(r),
                                         1000 + r, 77 + r, absl::Seconds(10));
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(result->hosts.size(), static_cast<size_t>(n));
    });
  }
  for (auto& t : threads) t.join();
  return clients;
}

}  // namespace podscope::job

#endif  // PODSCOPE_TESTS_JOB_JOB_TEST_UTIL_H_
