#ifndef PODSCOPE_TESTS_RUNTIME_TEST_UTIL_H_
#define PODSCOPE_TESTS_RUNTIME_TEST_UTIL_H_

#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../common/scoped_env.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/literal.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::runtime::testing {

#define PODSCOPE_ASSERT_OK_AND_ASSIGN(lhs, expr)         \
  auto PODSCOPE_TEST_CONCAT(_so_, __LINE__) = (expr);    \
  ASSERT_TRUE(PODSCOPE_TEST_CONCAT(_so_, __LINE__).ok()) \
      << PODSCOPE_TEST_CONCAT(_so_, __LINE__).status();  \
  lhs = std::move(PODSCOPE_TEST_CONCAT(_so_, __LINE__)).value()
#define PODSCOPE_TEST_CONCAT_INNER(a, b) a##b
#define PODSCOPE_TEST_CONCAT(a, b) PODSCOPE_TEST_CONCAT_INNER(a, b)

using ::podscope::testing::ScopedEnv;

inline std::unique_ptr<Client> MakeClient(int num_devices = 1) {
  ClientOptions options;
  options.num_devices = num_devices;
  auto client = CreateClient(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

inline Literal RandomF32(std::vector<int64_t> dims, std::mt19937& rng,
                         float lo = -1.0f, float hi = 1.0f) {
  Literal literal(F32Shape(std::move(dims)));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : literal.mutable_data<float>()) v = dist(rng);
  return literal;
}

inline Literal F32(std::vector<int64_t> dims, std::vector<float> values) {
  return Literal::FromVector<float>(std::move(dims), values).value();
}

inline Literal I32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Literal::FromVector<int32_t>(std::move(dims), values).value();
}

// Compiles `graph` on `client`, runs it on the first device and reads all
// outputs back.
inline absl::StatusOr<std::vector<Literal>> Run(
    Client& client, const Graph& graph, const std::vector<Literal>& args) {
  Device* device = client.addressable_devices()[0];
  auto executable = client.Compile(graph);
  if (!executable.ok()) return executable.status();
  std::vector<BufferPtr> buffers;
  for (const Literal& arg : args) {
    auto buffer = client.BufferFromLiteral(arg, device);
    if (!buffer.ok()) return buffer.status();
    buffers.push_back(*buffer);
  }
  auto outputs = (*executable)->Execute(buffers, device);
  if (!outputs.ok()) return outputs.status();
  std::vector<Literal> results;
  for (const BufferPtr& output : *outputs) {
    auto literal = output->ToLiteral().Await();
    if (!literal.ok()) return literal.status();
    results.push_back(*std::move(literal));
  }
  return results;
}

// Element-wise comparison with a combined absolute/relative tolerance.
inline ::testing::AssertionResult AllClose(const std::vector<float>& actual,
                                           const std::vector<float>& expected,
                                           float tolerance = 1e-5f) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const float scale = std::max(1.0f, std::abs(expected[i]));
    if (!(std::abs(actual[i] - expected[i]) <= tolerance * scale)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " vs expected "
             << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace podscope::runtime::testing

#endif  // PODSCOPE_TESTS_RUNTIME_TEST_UTIL_H_
