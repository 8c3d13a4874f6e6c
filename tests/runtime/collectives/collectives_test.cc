// Collectives across real processes: every op and dtype on 2, 3 and 4
// ranks against references computed locally, uneven and empty sizes, two
// communicators in flight, devices within a process, rendezvous (and its
// timeout naming the missing rank), and the trace each rank records.

#include "podscope/runtime/collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "multiprocess.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/file_store.h"
#include "podscope/runtime/ir/autodiff.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/pjrt/client.h"
#include "podscope/runtime/pjrt/executable.h"
#include "trace_file.h"

namespace podscope::runtime {
namespace {

using testing::EnvInt;
using ::testing::HasSubstr;
using testing::RunWorkers;

// ---- Workers (run in child processes). They print what went wrong and
// return non-zero.

#define WORKER_CHECK(cond, ...)                                           \
  do {                                                                    \
    if (!(cond)) {                                                        \
      std::fprintf(stderr, "rank %d: check failed: %s: ", Rank(), #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                  \
      std::fprintf(stderr, "\n");                                         \
      return 1;                                                           \
    }                                                                     \
  } while (0)

#define WORKER_OK(expr)                                 \
  do {                                                  \
    const absl::Status _s = (expr);                     \
    WORKER_CHECK(_s.ok(), "%s", _s.ToString().c_str()); \
  } while (0)

int Rank() { return EnvInt("RANK", 0); }
int World() { return EnvInt("WORLD_SIZE", 1); }

std::unique_ptr<job::KeyValueStore> Store() {
  auto store = OpenFileStore(std::getenv("PODSCOPE_TEST_STORE"));
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    std::exit(3);
  }
  return *std::move(store);
}

std::unique_ptr<Communicator> Connect(job::KeyValueStore& store,
                                      const std::string& prefix,
                                      CommunicatorOptions options = {}) {
  if (options.timeout == absl::Seconds(60)) options.timeout = absl::Seconds(30);
  auto comm = Communicator::Create(store, Rank(), World(), prefix, options);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", Rank(),
                 comm.status().ToString().c_str());
    std::exit(4);
  }
  return *std::move(comm);
}

// Rank r's input element i: small integers, so float sums are exact in any
// order and references equal results bitwise.
template <typename T>
T Input(int rank, int64_t i, int salt) {
  const int64_t v = (rank * 7 + i * 13 + salt * 5) % 23 - 11;
  if constexpr (std::is_same_v<T, uint8_t>) return (v + rank) % 3 == 0;
  return static_cast<T>(v);
}

template <typename T>
T Combine(ReduceOp op, T a, T b) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return op == ReduceOp::kMin ? (a && b) : (a || b);
  } else {
    switch (op) {
      case ReduceOp::kMax:
        return std::max(a, b);
      case ReduceOp::kMin:
        return std::min(a, b);
      default:
        return a + b;
    }
  }
}

template <typename T>
std::vector<T> Reference(ReduceOp op, int world, int64_t n, int salt) {
  std::vector<T> out(n);
  for (int64_t i = 0; i < n; ++i) {
    T acc = Input<T>(0, i, salt);
    for (int r = 1; r < world; ++r)
      acc = Combine(op, acc, Input<T>(r, i, salt));
    if (op == ReduceOp::kMean) acc = acc / static_cast<T>(world);
    out[i] = acc;
  }
  return out;
}

template <typename T>
int CheckOps(Communicator& comm, int salt_base) {
  const int world = comm.world_size(), rank = comm.rank();
  const ElementType type = ElementTypeOf<T>::value;
  std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin};
  if (type != ElementType::kPred) ops.push_back(ReduceOp::kMean);
  int salt = salt_base;
  // The largest size times its wait with a barrier, the others by their
  // result.
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{world + 1}, int64_t{1000},
                    int64_t{4099}, int64_t{70001}}) {
    for (ReduceOp op : ops) {
      ++salt;
      std::vector<T> data(n);
      for (int64_t i = 0; i < n; ++i) data[i] = Input<T>(rank, i, salt);
      WORKER_OK(comm.AllReduce(type, data.data(), n, op));
      WORKER_CHECK(data == Reference<T>(op, world, n, salt),
                   "AllReduce %s %s n=%lld", ElementTypeName(type).data(),
                   ReduceOpName(op).data(), static_cast<long long>(n));

      std::vector<T> input(n);
      for (int64_t i = 0; i < n; ++i) input[i] = Input<T>(rank, i, salt);
      const auto [begin, end] =
          Communicator::ReduceScatterRange(n, world, rank);
      std::vector<T> part(end - begin);
      WORKER_OK(comm.ReduceScatter(type, input.data(), n, part.data(), op));
      const std::vector<T> full = Reference<T>(op, world, n, salt);
      WORKER_CHECK(std::equal(part.begin(), part.end(), full.begin() + begin),
                   "ReduceScatter %s %s n=%lld", ElementTypeName(type).data(),
                   ReduceOpName(op).data(), static_cast<long long>(n));
    }
    std::vector<T> mine(n), gathered(n * world);
    for (int64_t i = 0; i < n; ++i) mine[i] = Input<T>(rank, i, salt);
    WORKER_OK(comm.AllGather(type, mine.data(), n, gathered.data()));
    for (int r = 0; r < world; ++r) {
      for (int64_t i = 0; i < n; ++i) {
        WORKER_CHECK(gathered[r * n + i] == Input<T>(r, i, salt),
                     "AllGather %s n=%lld rank %d element %lld",
                     ElementTypeName(type).data(), static_cast<long long>(n), r,
                     static_cast<long long>(i));
      }
    }
    const int root = world - 1;
    std::vector<T> b(n);
    for (int64_t i = 0; i < n; ++i) b[i] = Input<T>(rank, i, salt + 1);
    WORKER_OK(comm.Broadcast(type, b.data(), n, root));
    for (int64_t i = 0; i < n; ++i) {
      WORKER_CHECK(b[i] == Input<T>(root, i, salt + 1), "Broadcast n=%lld",
                   static_cast<long long>(n));
    }
  }
  WORKER_OK(comm.Barrier());
  return 0;
}

int OpsWorker() {
  auto store = Store();
  auto comm = Connect(*store, "ops");
  if (int rc = CheckOps<float>(*comm, 0); rc != 0) return rc;
  if (int rc = CheckOps<int32_t>(*comm, 100); rc != 0) return rc;
  return CheckOps<uint8_t>(*comm, 200);
}

// Two communicators used at once from two threads.
int TwoCommunicatorsWorker() {
  auto store = Store();
  auto a = Connect(*store, "a");
  auto b = Connect(*store, "b");
  int failures[2] = {0, 0};
  auto run = [&](Communicator& comm, int which) {
    for (int iter = 0; iter < 20; ++iter) {
      std::vector<int32_t> v(257 + iter, comm.rank() + which * 100 + iter);
      if (!comm.AllReduce(absl::MakeSpan(v), ReduceOp::kSum).ok()) {
        ++failures[which];
        continue;
      }
      int32_t expect = 0;
      for (int r = 0; r < comm.world_size(); ++r) {
        expect += r + which * 100 + iter;
      }
      if (v.front() != expect || v.back() != expect) ++failures[which];
    }
  };
  std::thread ta(run, std::ref(*a), 0);
  std::thread tb(run, std::ref(*b), 1);
  ta.join();
  tb.join();
  WORKER_CHECK(failures[0] == 0 && failures[1] == 0, "failures %d %d",
               failures[0], failures[1]);
  return 0;
}

// Two devices per process: buffers and lazy tensors; the mean over every
// process's devices, bitwise equal everywhere; BroadcastMasterParams.
int DevicesWorker() {
  auto store = Store();
  auto comm = Connect(*store, "dev");
  ClientOptions options;
  options.num_devices = 2;
  auto client = CreateClient(options);
  WORKER_OK(client.status());
  const auto devices = (*client)->addressable_devices();
  const int world = comm->world_size(), rank = comm->rank();
  std::vector<BufferPtr> buffers;
  for (int d = 0; d < 2; ++d) {
    std::vector<float> v(1001);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(rank * 2 + d) + i;
    auto b = (*client)->BufferFromHost(
        v.data(), F32Shape({1001}), devices[d],
        HostBufferSemantics::kImmutableOnlyDuringCall);
    WORKER_OK(b.status());
    buffers.push_back(*b);
  }
  auto reduced = comm->AllReduce(buffers, ReduceOp::kMean);
  WORKER_OK(reduced.status());
  WORKER_CHECK(reduced->size() == 2, "%zu results", reduced->size());
  std::vector<Literal> got;
  for (int d = 0; d < 2; ++d) {
    WORKER_CHECK((*reduced)[d]->device() == devices[d], "device %d", d);
    auto literal = (*reduced)[d]->ToLiteral().Await();
    WORKER_OK(literal.status());
    got.push_back(*std::move(literal));
  }
  const int n = world * 2;
  for (size_t i = 0; i < 1001; ++i) {
    float sum = 0;
    for (int k = 0; k < n; ++k) sum += float(k) + i;
    const float expect = sum / n;
    WORKER_CHECK(got[0].data<float>()[i] == expect, "element %zu: %f vs %f", i,
                 got[0].data<float>()[i], expect);
    WORKER_CHECK(got[1].data<float>()[i] == expect, "device 1 element %zu", i);
  }
  // Lazy tensors: a pending computation, then the all-reduce.
  std::vector<std::shared_ptr<LazyContext>> contexts;
  std::vector<Tensor> replicas;
  std::vector<std::vector<Tensor>> params(2);
  for (int d = 0; d < 2; ++d) {
    auto ctx = LazyContext::Create(client->get(), devices[d]);
    WORKER_OK(ctx.status());
    contexts.push_back(*ctx);
    Tensor x = (*ctx)->FromVector<float>({3}, {1.0f, 2.0f, float(rank)});
    replicas.push_back(x * 2.0f);
    params[d].push_back((*ctx)->FromVector<int32_t>({2}, {rank, d}));
  }
  auto sums = AllReduce(*comm, replicas, ReduceOp::kSum);
  WORKER_OK(sums.status());
  for (int d = 0; d < 2; ++d) {
    auto v = (*sums)[d].ToVector<float>();
    WORKER_OK(v.status());
    float rank_sum = 0;
    for (int r = 0; r < world; ++r) rank_sum += 2.0f * r * 2;
    WORKER_CHECK(
        *v == std::vector<float>({4.0f * n / 2 * 1, 4.0f * n, rank_sum}),
        "tensor sum on device %d: %f %f %f", d, (*v)[0], (*v)[1], (*v)[2]);
  }
  // Issue order holds across a device stream and the host: rank 0's
  // tensor is still being computed (a large matmul) when the host issues
  // the next collective, yet both run in the order they were issued.
  {
    Tensor m = contexts[0]->Full(F32Shape({rank == 0 ? 600 : 2, 600}), 0.01f);
    Tensor w = contexts[0]->Full(F32Shape({600, 600}), 0.01f);
    Tensor slow = Sum(Matmul(Matmul(m, w), w), {0, 1});
    auto reduced_slow = AllReduce(*comm, {Reshape(slow, {1})}, ReduceOp::kMax);
    WORKER_OK(reduced_slow.status());
    std::vector<int32_t> quick = {rank + 1};
    WORKER_OK(comm->AllReduce(absl::MakeSpan(quick), ReduceOp::kSum));
    WORKER_CHECK(quick[0] == world * (world + 1) / 2, "host sum %d", quick[0]);
    auto v = (*reduced_slow)[0].ToVector<float>();
    WORKER_OK(v.status());
    const float big = 600 * 600 * (600 * 0.01f * 0.01f) * (600 * 0.01f);
    WORKER_CHECK(std::abs((*v)[0] - big) < big * 1e-3, "slow max %f vs %f",
                 (*v)[0], big);
  }
  std::vector<std::vector<Tensor>*> lists = {&params[0], &params[1]};
  WORKER_OK(BroadcastMasterParams(*comm, lists));
  for (int d = 0; d < 2; ++d) {
    auto v = params[d][0].ToVector<int32_t>();
    WORKER_OK(v.status());
    WORKER_CHECK(*v == std::vector<int32_t>({0, 0}), "master param %d %d",
                 (*v)[0], (*v)[1]);
  }
  return 0;
}

int RendezvousWorker() {
  auto store = Store();
  CommunicatorOptions options;
  options.timeout = absl::Seconds(8);
  auto comm = Connect(*store, "rdv", options);
  for (int use = 0; use < 2; ++use) {
    auto payloads =
        comm->Rendezvous("init", "rank" + std::to_string(comm->rank()) + "." +
                                     std::to_string(use));
    WORKER_OK(payloads.status());
    for (int r = 0; r < comm->world_size(); ++r) {
      WORKER_CHECK((*payloads)[r] ==
                       "rank" + std::to_string(r) + "." + std::to_string(use),
                   "payload %d: %s", r, (*payloads)[r].c_str());
    }
  }
  if (EnvInt("SKIP_RANK", -1) == comm->rank()) return 0;  // never arrives
  if (EnvInt("SKIP_RANK", -1) < 0) return 0;
  auto late = comm->Rendezvous("checkpoint", "x");
  WORKER_CHECK(absl::IsDeadlineExceeded(late.status()), "%s",
               late.status().ToString().c_str());
  std::printf("ERROR: %s\n", late.status().ToString().c_str());
  return 0;
}

// Records a trace of a few collectives into the run's session folder.
int TraceWorker() {
  auto store = Store();
  profiler::TraceOptions trace;
  trace.session_id = "session";
  WORKER_OK(profiler::StartTrace(std::getenv("PODSCOPE_TEST_DIR"), trace));
  ClientOptions options;
  auto client = CreateClient(options);
  WORKER_OK(client.status());
  CommunicatorOptions comm_options;
  comm_options.trace_device = (*client)->addressable_devices()[0];
  auto comm = Connect(*store, "traced", comm_options);
  if (comm->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // arrive late
  }
  std::vector<float> v(1 << 16, 1.0f);
  for (int i = 0; i < 3; ++i) {
    WORKER_OK(comm->AllReduce(absl::MakeSpan(v), ReduceOp::kSum));
  }
  auto path = profiler::StopTrace();
  WORKER_OK(path.status());
  return 0;
}

// Records every kind of collective: all-gather, reduce-scatter, broadcast,
// barrier and a small all-reduce on the host "collectives" track (rank 1
// arrives late at the first and the last), the all_reduce IR op on device
// 0's stream, and an all-reduce that
// fails because rank 1 has gone (rank 1 closes its trace first).
int TraceOpsWorker() {
  auto store = Store();
  profiler::TraceOptions trace;
  trace.session_id = "session";
  WORKER_OK(profiler::StartTrace(
      absl::StrCat(std::getenv("PODSCOPE_TEST_DIR"), "/rank", Rank()), trace));
  auto client = CreateClient(ClientOptions());
  WORKER_OK(client.status());
  Device* device = (*client)->addressable_devices()[0];
  auto comm = Connect(*store, "tops");
  const int rank = comm->rank(), world = comm->world_size();
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // arrive late
  }
  std::vector<float> mine(100, 1.0f), all(100 * world);
  WORKER_OK(comm->AllGather(ElementType::kF32, mine.data(), 100, all.data()));
  std::vector<int32_t> in(101, rank);
  const auto [begin, end] = Communicator::ReduceScatterRange(101, world, rank);
  std::vector<int32_t> part(end - begin);
  WORKER_OK(comm->ReduceScatter(ElementType::kI32, in.data(), 101, part.data(),
                                ReduceOp::kMax));
  std::vector<float> b(50, float(rank));
  WORKER_OK(comm->Broadcast(ElementType::kF32, b.data(), 50, 1));
  WORKER_OK(comm->Barrier());
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // late again
  }
  std::vector<float> small(7, 1.0f);
  WORKER_OK(comm->AllReduce(absl::MakeSpan(small), ReduceOp::kSum));

  CommunicatorOptions on_device;
  on_device.trace_device = device;
  auto ir_comm = Connect(*store, "tir", on_device);
  GraphBuilder g("traced_all_reduce");
  Value x = g.Parameter(F32Shape({5}));
  auto graph = g.Build({g.AllReduce(x, ir_comm->id(), ReduceOp::kSum)});
  WORKER_OK(graph.status());
  auto executable = (*client)->Compile(*graph);
  WORKER_OK(executable.status());
  std::vector<float> xs(5, 1.0f);
  auto xb =
      (*client)->BufferFromHost(xs.data(), F32Shape({5}), device,
                                HostBufferSemantics::kImmutableOnlyDuringCall);
  WORKER_OK(xb.status());
  auto outputs = (*executable)->Execute({*xb}, device);
  WORKER_OK(outputs.status());
  WORKER_OK((*outputs)[0]->ToLiteral().Await().status());

  CommunicatorOptions short_timeout;
  short_timeout.timeout = absl::Seconds(5);
  auto doomed = Connect(*store, "tfail", short_timeout);
  WORKER_OK(doomed->Barrier());
  if (rank == 1) {
    WORKER_OK(profiler::StopTrace().status());
    _exit(0);
  }
  std::vector<float> v(10, 1.0f);
  absl::Status s = doomed->AllReduce(absl::MakeSpan(v), ReduceOp::kSum);
  WORKER_CHECK(!s.ok(), "an all-reduce with a dead peer succeeded");
  WORKER_OK(profiler::StopTrace().status());
  return 0;
}

// Bytes this process has written (to its sockets, here) so far.
int64_t BytesWritten() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = -1;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  return -1;
}

// The same small all-reduces on a communicator that times their wait and
// on one that does not: prints the bytes each made this process write.
int WaitCostWorker() {
  auto store = Store();
  auto timed = Connect(*store, "timed");
  CommunicatorOptions untimed_options;
  untimed_options.measure_wait = false;
  auto untimed = Connect(*store, "untimed", untimed_options);
  std::vector<float> v(256, 1.0f);
  // wchar counts every write of the process, including a background
  // thread's; the fewest bytes over a few alternating rounds is what the
  // all-reduces themselves wrote.
  int64_t written[2] = {INT64_MAX, INT64_MAX};
  Communicator* comms[2] = {timed.get(), untimed.get()};
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 2; ++k) {
      WORKER_OK(comms[k]->Barrier());
      const int64_t before = BytesWritten();
      for (int i = 0; i < 20; ++i) {
        WORKER_OK(comms[k]->AllReduce(absl::MakeSpan(v), ReduceOp::kSum));
      }
      const int64_t bytes = BytesWritten() - before;
      WORKER_CHECK(before >= 0 && bytes > 0, "no /proc/self/io wchar");
      written[k] = std::min(written[k], bytes);
    }
  }
  std::printf("WRITTEN timed %lld untimed %lld\n",
              static_cast<long long>(written[0]),
              static_cast<long long>(written[1]));
  return 0;
}

// The all_reduce IR op inside a compiled computation, and through lazy
// tensors with a gradient.
int IrWorker() {
  auto store = Store();
  auto comm = Connect(*store, "ir");
  auto client = CreateClient(ClientOptions());
  WORKER_OK(client.status());
  Device* device = (*client)->addressable_devices()[0];
  const int world = comm->world_size(), rank = comm->rank();
  GraphBuilder b("all_reduce_graph");
  Value x = b.Parameter(F32Shape({5}));
  Value y = b.AllReduce(b.Mul(x, x), comm->id(), ReduceOp::kSum);
  Value z = b.Add(y, x);
  auto graph = b.Build({z});
  WORKER_OK(graph.status());
  auto executable = (*client)->Compile(*graph);
  WORKER_OK(executable.status());
  std::vector<float> xs(5);
  for (int i = 0; i < 5; ++i) xs[i] = float(rank + 1 + i);
  auto xb =
      (*client)->BufferFromHost(xs.data(), F32Shape({5}), device,
                                HostBufferSemantics::kImmutableOnlyDuringCall);
  WORKER_OK(xb.status());
  for (int run = 0; run < 2; ++run) {
    auto outputs = (*executable)->Execute({*xb}, device);
    WORKER_OK(outputs.status());
    auto literal = (*outputs)[0]->ToLiteral().Await();
    WORKER_OK(literal.status());
    for (int i = 0; i < 5; ++i) {
      float expect = 0;
      for (int r = 0; r < world; ++r) expect += float(r + 1 + i) * (r + 1 + i);
      expect += xs[i];
      WORKER_CHECK(literal->data<float>()[i] == expect, "run %d z[%d] %f vs %f",
                   run, i, literal->data<float>()[i], expect);
    }
  }
  // Lazy: the op joins the step's graph, and Grad goes through it.
  auto ctx = LazyContext::Create(client->get(), device);
  WORKER_OK(ctx.status());
  Tensor w = (*ctx)->FromVector<float>({3}, {1.0f, 2.0f, float(rank)});
  Tensor loss = Sum(AllReduce(w * w, *comm, ReduceOp::kMean), {0});
  auto grads = Grad(loss, {w});
  WORKER_OK(grads.status());
  auto g = (*grads)[0].ToVector<float>();
  WORKER_OK(g.status());
  WORKER_CHECK(*g == std::vector<float>({2.0f, 4.0f, 2.0f * rank}),
               "grad %f %f %f", (*g)[0], (*g)[1], (*g)[2]);
  auto l = loss.Item();
  WORKER_OK(l.status());
  float expect = 5.0f;
  float squares = 0;
  for (int r = 0; r < world; ++r) squares += float(r) * r;
  expect += squares / world;
  WORKER_CHECK(std::abs(*l - expect) < 1e-5, "loss %f vs %f", *l, expect);
  return 0;
}

// Rank 1 dies after a first collective; rank 0's next one fails, naming it.
int DeadPeerWorker() {
  auto store = Store();
  CommunicatorOptions options;
  options.timeout = absl::Seconds(5);
  auto comm = Connect(*store, "dead", options);
  WORKER_OK(comm->Barrier());  // both connected and past a collective
  if (comm->rank() == 1) _exit(0);
  std::vector<float> v(1000, 1.0f);
  absl::Status s = comm->AllReduce(absl::MakeSpan(v), ReduceOp::kSum);
  WORKER_CHECK(!s.ok(), "an all-reduce with a dead peer succeeded");
  std::printf("ERROR: %s\n", s.ToString().c_str());
  return 0;
}

// ---- Tests (the parent process).

void ExpectAllSucceeded(const std::vector<testing::WorkerResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << " output:\n"
                                       << results[r].output;
  }
}

class CollectivesByWorld : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesByWorld, EveryOpAndDtypeMatchesTheLocalReference) {
  const int world = GetParam();
  const std::string dir = testing::FreshRunDir("ops" + std::to_string(world));
  ExpectAllSucceeded(RunWorkers("ops", world, dir));
}

INSTANTIATE_TEST_SUITE_P(Worlds, CollectivesByWorld,
                         ::testing::Values(2, 3, 4));

TEST(Collectives, AllReduceAsAnOpInsideACompiledComputation) {
  const std::string dir = testing::FreshRunDir("ir");
  ExpectAllSucceeded(RunWorkers("ir", 3, dir));
}

TEST(Collectives, TwoCommunicatorsInFlightAtOnce) {
  const std::string dir = testing::FreshRunDir("two");
  ExpectAllSucceeded(RunWorkers("two_comms", 3, dir));
}

TEST(Collectives, DevicesWithinAProcessAndLazyTensors) {
  const std::string dir = testing::FreshRunDir("devices");
  ExpectAllSucceeded(RunWorkers("devices", 2, dir));
}

TEST(Collectives, RendezvousReturnsPayloadsInRankOrder) {
  const std::string dir = testing::FreshRunDir("rdv");
  ExpectAllSucceeded(RunWorkers("rendezvous", 3, dir));
}

TEST(Collectives, RendezvousTimeoutNamesTheMissingRank) {
  const std::string dir = testing::FreshRunDir("rdv_missing");
  auto results = RunWorkers("rendezvous", 3, dir, {"SKIP_RANK=2"});
  ExpectAllSucceeded(results);
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(results[r].output, HasSubstr("DEADLINE_EXCEEDED"));
    EXPECT_THAT(results[r].output, HasSubstr("Rendezvous 'checkpoint'"));
    EXPECT_THAT(results[r].output, HasSubstr("rank 2 of 3 did not arrive"));
  }
}

TEST(Collectives, ADeadPeerFailsTheCollectiveWithItsName) {
  const std::string dir = testing::FreshRunDir("dead");
  auto results = RunWorkers("dead_peer", 2, dir);
  ExpectAllSucceeded(results);
  EXPECT_THAT(results[0].output, HasSubstr("AllReduce dead#1 (rank 0 of 2)"));
}

TEST(Collectives, ConnectingWithoutPeersTimesOut) {
  const std::string dir = testing::FreshRunDir("alone");
  auto store = OpenFileStore(dir + "/store");
  ASSERT_TRUE(store.ok());
  CommunicatorOptions options;
  options.timeout = absl::Milliseconds(500);
  auto comm = Communicator::Create(**store, 0, 2, "alone", options);
  ASSERT_FALSE(comm.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(comm.status())) << comm.status();
  EXPECT_THAT(comm.status().message(), HasSubstr("rank 0 of 2"));
}

TEST(Collectives, BadArgumentsAreRejected) {
  const std::string dir = testing::FreshRunDir("bad");
  auto store = OpenFileStore(dir + "/store");
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE(Communicator::Create(**store, 2, 2, "x").ok());
  auto comm = Communicator::Create(**store, 0, 1, "single");
  ASSERT_TRUE(comm.ok()) << comm.status();
  uint8_t flags[2] = {1, 0};
  absl::Status mean =
      (*comm)->AllReduce(ElementType::kPred, flags, 2, ReduceOp::kMean);
  EXPECT_TRUE(absl::IsInvalidArgument(mean)) << mean;
  EXPECT_FALSE((*comm)->Broadcast(ElementType::kPred, flags, 2, 1).ok());
  EXPECT_FALSE((*comm)->Rendezvous("a/b", "").ok());
}

// Timing the wait of a small all-reduce (a few KB, latency-bound) costs no
// messages: a barrier before it would double what it sends and its
// latency.
TEST(Collectives, TimingTheWaitOfASmallAllReduceSendsNothingMore) {
  const std::string dir = testing::FreshRunDir("wait_cost");
  const auto results = RunWorkers("wait_cost", 2, dir);
  ExpectAllSucceeded(results);
  for (const auto& result : results) {
    long long timed = -1, untimed = -1;
    const size_t at = result.output.find("WRITTEN");
    ASSERT_NE(at, std::string::npos) << result.output;
    ASSERT_EQ(std::sscanf(result.output.c_str() + at,
                          "WRITTEN timed %lld untimed %lld", &timed, &untimed),
              2);
    EXPECT_EQ(timed, untimed);
  }
}

TEST(Collectives, EachRankTracesItsCollectivesWithSharedIds) {
  const std::string dir = testing::FreshRunDir("trace");
  ExpectAllSucceeded(RunWorkers("trace", 2, dir));
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/session")) {
    if (e.path().extension() == ".podtrace") files.push_back(e.path());
  }
  ASSERT_EQ(files.size(), 2u);
  std::vector<std::vector<std::string>> ids(2);
  std::vector<int64_t> max_wait(2, 0);
  for (size_t k = 0; k < files.size(); ++k) {
    auto f = profiler::testing::ReadTraceFile(files[k]);
    ASSERT_NE(f.reader, nullptr) << files[k];
    const auto* track = f.Track("device 0 (CPU) stream");
    ASSERT_NE(track, nullptr);
    for (uint32_t i = 0; i < track->events.slices.size(); ++i) {
      if (f.Name(track->events.slices[i].name) != "AllReduce") continue;
      EXPECT_EQ(f.IntArg(*track, i, "bytes"), (1 << 16) * 4);
      EXPECT_EQ(f.IntArg(*track, i, "participants"), 2);
      EXPECT_EQ(f.StringArg(*track, i, "op"), "sum");
      EXPECT_EQ(f.StringArg(*track, i, "algorithm"), "ring");
      max_wait[k] = std::max(max_wait[k], f.IntArg(*track, i, "wait_ns"));
      ids[k].push_back(f.StringArg(*track, i, "collective_id"));
    }
  }
  ASSERT_EQ(ids[0].size(), 3u);
  EXPECT_EQ(ids[0], ids[1]);
  EXPECT_EQ(ids[0][0], "traced#0");
  // Rank 1 arrived 200 ms late: rank 0 waited for it, rank 1 did not.
  EXPECT_GT(std::max(max_wait[0], max_wait[1]), 100'000'000);
  EXPECT_LT(std::min(max_wait[0], max_wait[1]), 100'000'000);
}

// One collective's slice as a rank recorded it.
struct TracedCollective {
  std::string track, name, op, algorithm;
  int64_t bytes = -1, participants = -1, wait_ns = -1, ok = -1;
};

// Every rank's collectives by collective_id, from the trace rank r wrote
// under <dir>/rank<r>/session/.
std::vector<std::map<std::string, TracedCollective>> ReadCollectives(
    const std::string& dir, int world) {
  std::vector<std::map<std::string, TracedCollective>> by_rank(world);
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> files;
    const std::string session =
        dir + "/rank" + std::to_string(rank) + "/session";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(session, ec)) {
      if (e.path().extension() == ".podtrace") files.push_back(e.path());
    }
    if (files.size() != 1) continue;
    auto f = profiler::testing::ReadTraceFile(files[0]);
    if (f.reader == nullptr || !f.reader->report().has_index) continue;
    for (const auto& track : f.tracks) {
      for (uint32_t i = 0; i < track.events.slices.size(); ++i) {
        const std::string id = f.StringArg(track, i, "collective_id");
        if (id.empty()) continue;
        TracedCollective c;
        c.track = track.track.name();
        c.name = f.Name(track.events.slices[i].name);
        c.op = f.StringArg(track, i, "op");
        c.algorithm = f.StringArg(track, i, "algorithm");
        c.bytes = f.IntArg(track, i, "bytes");
        c.participants = f.IntArg(track, i, "participants");
        c.wait_ns = f.IntArg(track, i, "wait_ns");
        c.ok = f.IntArg(track, i, "ok");
        by_rank[rank][id] = c;
      }
    }
  }
  return by_rank;
}

TEST(Collectives, EveryKindOfCollectiveIsTracedWithItsArgs) {
  const std::string dir = testing::FreshRunDir("trace_ops");
  ExpectAllSucceeded(RunWorkers("trace_ops", 2, dir));
  auto ranks = ReadCollectives(dir, 2);
  struct Expected {
    std::string id, track, name, op, algorithm;
    int64_t bytes;
  };
  const std::vector<Expected> expected = {
      {"tops#0", "collectives", "AllGather", "", "ring", 100 * 4},
      {"tops#1", "collectives", "ReduceScatter", "max", "ring", 101 * 4},
      {"tops#2", "collectives", "Broadcast", "", "one_to_all", 50 * 4},
      {"tops#3", "collectives", "Barrier", "", "all_to_all", 0},
      {"tops#4", "collectives", "AllReduce", "sum", "ring", 7 * 4},
      {"tir#0", "device 0 (CPU) stream", "AllReduce", "sum", "ring", 5 * 4},
  };
  for (int r = 0; r < 2; ++r) {
    for (const Expected& e : expected) {
      SCOPED_TRACE("rank " + std::to_string(r) + " " + e.id);
      ASSERT_TRUE(ranks[r].count(e.id));
      const TracedCollective& c = ranks[r][e.id];
      EXPECT_EQ(c.track, e.track);
      EXPECT_EQ(c.name, e.name);
      EXPECT_EQ(c.op, e.op);
      EXPECT_EQ(c.algorithm, e.algorithm);
      EXPECT_EQ(c.bytes, e.bytes);
      EXPECT_EQ(c.participants, 2);
      EXPECT_EQ(c.ok, 1);
      EXPECT_GE(c.wait_ns, 0);
    }
    // The barrier does not time a wait of its own.
    EXPECT_EQ(ranks[r]["tops#3"].wait_ns, 0);
  }
  // Rank 1 came to the all-gather 200 ms late: rank 0 waited for it.
  EXPECT_GT(ranks[0]["tops#0"].wait_ns, 100'000'000);
  EXPECT_LT(ranks[1]["tops#0"].wait_ns, 100'000'000);
  // And to the small all-reduce, whose result times the wait.
  EXPECT_GT(ranks[0]["tops#4"].wait_ns, 100'000'000);
  EXPECT_LT(ranks[1]["tops#4"].wait_ns, 100'000'000);
  // The failed all-reduce: only rank 0 recorded it, marked failed.
  ASSERT_TRUE(ranks[0].count("tfail#1"));
  EXPECT_EQ(ranks[0]["tfail#1"].name, "AllReduce");
  EXPECT_EQ(ranks[0]["tfail#1"].ok, 0);
  EXPECT_EQ(ranks[0]["tfail#1"].bytes, 10 * 4);
  EXPECT_FALSE(ranks[1].count("tfail#1"));
  EXPECT_EQ(ranks[1]["tfail#0"].ok, 1);
}

}  // namespace
}  // namespace podscope::runtime

int main(int argc, char** argv) {
  using namespace podscope::runtime;
  if (argc >= 3 && std::string(argv[1]) == "--worker") {
    const std::map<std::string, std::function<int()>> workers = {
        {"ops", OpsWorker},
        {"two_comms", TwoCommunicatorsWorker},
        {"devices", DevicesWorker},
        {"rendezvous", RendezvousWorker},
        {"trace", TraceWorker},
        {"trace_ops", TraceOpsWorker},
        {"ir", IrWorker},
        {"dead_peer", DeadPeerWorker},
        {"wait_cost", WaitCostWorker},
    };
    auto it = workers.find(argv[2]);
    if (it == workers.end()) {
      std::fprintf(stderr, "unknown worker %s\n", argv[2]);
      return 2;
    }
    return it->second();
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
