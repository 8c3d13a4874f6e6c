// The host memory of an SPMD step's inserted collectives: a step repeated
// takes it from the step before instead of allocating it again (fresh
// memory costs a page fault per page and a zeroing on the thread the
// devices wait for), and still computes what one device computes. Large
// allocations are counted by the operator new below.
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/spmd.h"
#include "test_util.h"

namespace {

constexpr size_t kLarge = size_t{256} << 10;
std::atomic<int64_t> g_large_allocations{0};

void* Counted(size_t n) {
  if (n >= kLarge) g_large_allocations.fetch_add(1);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(size_t n) { return Counted(n); }
void* operator new[](size_t n) { return Counted(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
// Every form a delete above may free must come from malloc.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace podscope::runtime {
namespace {

using testing::AllClose;
using testing::RandomF32;

TEST(SpmdHostMemoryTest, RepeatedStepsReuseTheCollectivesHostMemory) {
  auto client = testing::MakeClient(4);
  ASSERT_NE(client, nullptr);
  auto mesh = std::make_shared<const Mesh>(
      Mesh::Create({0, 1, 2, 3}, {2, 2}, {"data", "model"}, *client).value());
  auto executor = SpmdExecutor::Create(client.get(), mesh).value();
  auto spec = [&](const PartitionSpec& s) {
    return Sharding::Create(mesh, s, static_cast<int>(s.size())).value();
  };
  std::mt19937 rng(5);
  GraphBuilder b("repeated");
  Value x = b.Parameter(F32Shape({512, 256}));
  Value w = b.Parameter(F32Shape({256, 512}));
  // Contracted over 'model': partial sums of 1 MB on every device,
  // all-reduced before the relu.
  Value h = b.Relu(b.Dot(x, w));
  auto graph = b.Build({b.ReduceSum(h, {1})}).value();
  const std::vector<Literal> args = {RandomF32({512, 256}, rng),
                                     RandomF32({256, 512}, rng)};
  auto expected = testing::Run(*client, graph, args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto program = SpmdProgram::Partition(
      graph, mesh, {spec({{}, {"model"}}), spec({{"model"}, {}})});
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_FALSE((*program)->collectives().empty());
  std::vector<ShardedValue> sharded;
  for (size_t i = 0; i < args.size(); ++i) {
    auto v = executor->Shard(
        args[i], (*program)->parameter_sharding(static_cast<int>(i)));
    ASSERT_TRUE(v.ok()) << v.status();
    sharded.push_back(*std::move(v));
  }
  std::vector<ShardedValue> outs;
  auto step = [&] {
    auto run = executor->Execute(**program, sharded);
    ASSERT_TRUE(run.ok()) << run.status();
    outs = *std::move(run);
    for (const BufferPtr& shard : outs[0].shards) {
      ASSERT_TRUE(shard->Await().ok());
    }
  };
  for (int i = 0; i < 2; ++i) step();
  constexpr int kSteps = 8;
  const int64_t before = g_large_allocations.load();
  for (int i = 0; i < kSteps; ++i) step();
  const int64_t large = g_large_allocations.load() - before;
  EXPECT_EQ(large, 0) << "allocations of 256 KB or more in " << kSteps
                      << " steps";
  auto got = executor->Gather(outs[0]);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(AllClose(got->ToVector<float>(), (*expected)[0].ToVector<float>(),
                       1e-3f));
}

}  // namespace
}  // namespace podscope::runtime
