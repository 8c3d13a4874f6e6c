// The seed's MNIST CNN trained on Podscope's embedded runtime with its lazy
// (PyTorch/XLA-style) tensor API, profiled end to end: host scopes for the
// phases of each step, and the runtime's compiles, transfers and every
// kernel on the device stream tracks, named after the user scopes.
//
//   train_mnist [--logdir DIR] [--steps N] [--test_batches N]
//               [--log_every N] [--batch_size N] [--dropout] [--fake_data]
//               [--profiler_port N] [--store_dir DIR] [--spmd]
//
// Data: Fashion-MNIST from Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist, or $PODSCOPE_MNIST_DIR), or with
// --fake_data a deterministic synthetic set of the same shape.
//
// Batch size, as in PyTorch: --batch_size is the batch of each process
// (default 256), so a job of W processes steps on W x batch_size images.
// CPU_NUM_DEVICES=N trains data-parallel on N devices, each taking a slice
// of the process's batch as even as it can be (256 over 3 devices: 86, 85,
// 85; see mnist/trainer.h), with the loss and the gradient the mean over
// every image of the job's batch. Any batch of at least N images works.
//
// --spmd: the seed's SPMD example instead (mnist/spmd_trainer.h): one
// global step program over meshes of every device of the job, its weights
// and input sharded as the seed marks them, partitioned by the runtime.
// There --batch_size is the job's global batch (PyTorch/XLA SPMD's
// convention: one program over the whole batch), split by the partitioner.
//
// Model and optimizer: mnist/trainer.h (the seed's MNISTNet; its dropout
// layers with --dropout); SGD with momentum 0.5, lr 0.01; batch 256 per
// process.
//
// Processes: with WORLD_SIZE > 1 in the environment (RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT, as `podscope launch` or torchrun set
// them) the job trains data-parallel across processes: rank 0's parameters
// are broadcast at start, rank r takes the r-th --batch_size images of
// every global batch of WORLD_SIZE x --batch_size, gradients are
// all-reduced over Gloo each step (weighted: the mean over every image). The
// ranks join the job with Job::Init (rank 0 hosts the coordinator at
// MASTER_ADDR:MASTER_PORT) and meet through its store; with --store_dir DIR (or
// $PODSCOPE_STORE_DIR) they meet through a FileStore in DIR instead, without a
// coordinator. Keys go under a prefix of the session id ($PODSCOPE_SESSION,
// else "job-<MASTER_PORT>"); every rank writes its trace into
// <logdir>/<session>/ and serves its profiler on
// --profiler_port + LOCAL_RANK (published in the job's store, for `podscope
// capture --job`). At the end each rank prints a hash of its
// parameters ("params <hex>"), equal on every rank.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "mnist/data.h"
#include "mnist/spmd_trainer.h"
#include "mnist/train_flags.h"
#include "mnist/trainer.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/collectives.h"
#include "podscope/runtime/distributed.h"
#include "podscope/runtime/file_store.h"
#include "podscope/runtime/pjrt/client.h"

namespace {

namespace rt = podscope::runtime;
namespace prof = podscope::profiler;
namespace mnist = podscope::mnist;
using mnist::Flags;

// The job this process belongs to, from the launcher's environment.
struct JobEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string session;
};

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::atoi(v);
}

JobEnv ReadJobEnv() {
  JobEnv job;
  job.rank = EnvInt("RANK", 0);
  job.world_size = EnvInt("WORLD_SIZE", 1);
  job.local_rank = EnvInt("LOCAL_RANK", job.rank);
  if (const char* s = std::getenv("PODSCOPE_SESSION"); s && *s) {
    job.session = s;
  } else if (job.world_size > 1) {
    const char* port = std::getenv("MASTER_PORT");
    job.session = std::string("job-") + (port && *port ? port : "0");
  }
  return job;
}

// FNV-1a over every parameter's bytes: equal on every rank when the
// replicas are identical.
absl::StatusOr<uint64_t> ParamsHash(const mnist::Trainer& trainer) {
  uint64_t h = 1469598103934665603ull;
  for (int r = 0; r < trainer.num_replicas(); ++r) {
    for (const rt::Tensor& p : trainer.params(r)) {
      PODSCOPE_ASSIGN_OR_RETURN(auto values, p.ToVector<float>());
      const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
      for (size_t i = 0; i < values.size() * sizeof(float); ++i) {
        h = (h ^ bytes[i]) * 1099511628211ull;
      }
    }
  }
  return h;
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "train_mnist: %s\n", status.ToString().c_str());
  if (prof::IsTracing()) (void)prof::StopTrace();
  return 1;
}

// --spmd: the seed's SPMD example (mnist/spmd_trainer.h). Every rank steps
// on the whole global batch; the partitioner gives each device its shard.
absl::Status TrainSpmd(const Flags& flags, rt::Client* client,
                       rt::Communicator* communicator,
                       const mnist::Dataset& train) {
  using Clock = std::chrono::steady_clock;
  const int n = flags.batch_size;
  mnist::SpmdTrainerOptions options;
  options.communicator = communicator;
  PODSCOPE_ASSIGN_OR_RETURN(auto trainer,
                            mnist::SpmdTrainer::Create(client, n, options));
  const rt::SpmdProgram& program = trainer->program();
  std::printf(
      "spmd: mesh %s; %zu inserted collectives, %lld bytes per "
      "device per step (least required %lld)\n",
      trainer->conv_mesh().ToString().c_str(), program.collectives().size(),
      static_cast<long long>(trainer->CollectiveBytesPerStep()),
      static_cast<long long>(trainer->MinCollectiveBytesPerStep()));
  for (int i = 0; i < 8; ++i) {
    std::printf("spmd: %s %s\n",
                mnist::SpmdTrainer::ParameterNames()[i].c_str(),
                program.parameter_sharding(2 + i).SpecString().c_str());
  }
  std::vector<int> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 shuffle_rng(12);
  std::shuffle(order.begin(), order.end(), shuffle_rng);
  std::vector<float> images;
  std::vector<int32_t> labels;
  const auto start = Clock::now();
  for (int step = 0; step < flags.steps; ++step) {
    PODSCOPE_STEP(step);
    {
      PODSCOPE_TRACE("train_step_data_prep");
      mnist::Gather(train, order, step * n, n, &images, &labels);
    }
    if (absl::Status s = trainer->Step(images, labels); !s.ok()) return s;
    if (step % flags.log_every == 0 || step + 1 == flags.steps) {
      PODSCOPE_TRACE("read_loss");
      PODSCOPE_ASSIGN_OR_RETURN(auto loss, trainer->LastLoss());
      std::printf("step %4d  loss %.4f  (%.1f s)\n", step, loss,
                  std::chrono::duration<double>(Clock::now() - start).count());
      std::fflush(stdout);
    }
  }
  if (absl::Status s = trainer->WaitUntilIdle(); !s.ok()) return s;
  const double secs =
      std::chrono::duration<double>(Clock::now() - start).count();
  PODSCOPE_ASSIGN_OR_RETURN(auto params, trainer->Parameters());
  uint64_t h = 1469598103934665603ull;
  for (const rt::Literal& p : params) {
    const auto* bytes = static_cast<const unsigned char*>(p.untyped_data());
    for (int64_t i = 0; i < p.size_bytes(); ++i) {
      h = (h ^ bytes[i]) * 1099511628211ull;
    }
  }
  std::printf("params %016llx\ntrained %d steps in %.1f s (%.2f s/step)\n",
              static_cast<unsigned long long>(h), flags.steps, secs,
              secs / flags.steps);
  return absl::OkStatus();
}

// What a rank holds while it trains: its membership of the job (none
// without a coordinator), its own profiler server when it has no
// membership, the client, and with several processes the store and the
// communicator. Members are destroyed in reverse order, the communicator
// first.
struct Rank {
  JobEnv job;
  std::shared_ptr<rt::Job> membership;
  std::unique_ptr<prof::ProfilerServer> server;
  std::unique_ptr<rt::Client> client;
  std::unique_ptr<podscope::job::KeyValueStore> file_store;
  podscope::job::KeyValueStore* store = nullptr;
  std::unique_ptr<rt::Communicator> communicator;
  std::string prefix;  // of the job's keys
};

// Joins the job when there is one and no --store_dir: the client then
// spans every rank's devices, and the job's coordinator is the store.
absl::Status JoinJob(const Flags& flags, const std::string& store_dir,
                     Rank& rank) {
  if (rank.job.world_size <= 1 || !store_dir.empty()) return absl::OkStatus();
  PODSCOPE_TRACE("job_init");
  rt::InitOptions init;
  // The job serves this rank's profiler and publishes it, so that
  // `podscope capture --job MASTER_ADDR:MASTER_PORT` finds every rank
  // (reachable from other hosts, with the job's token, when the job
  // spans hosts).
  init.start_profiler_server = flags.profiler_port >= 0;
  init.profiler_port =
      flags.profiler_port <= 0 ? 0 : flags.profiler_port + rank.job.local_rank;
  PODSCOPE_ASSIGN_OR_RETURN(auto joined, rt::Job::Init(init));
  rank.membership = std::move(joined);
  if (const std::string a = rank.membership->profiler_address(); !a.empty()) {
    std::printf("profiler server on %s\n", a.c_str());
  }
  return absl::OkStatus();
}

// The seed's start_server(9012) for a rank outside a job's membership: the
// job can be inspected (GetInfo, clock probes) and, when it is not
// recording itself, captured remotely with `podscope capture
// --service_addr localhost:9012`. A port in use is reported and training
// goes on without the server.
void StartProfilerServer(const Flags& flags, Rank& rank) {
  if (flags.profiler_port < 0 || rank.membership != nullptr) return;
  auto started = prof::StartServer(
      flags.profiler_port == 0 ? 0 : flags.profiler_port + rank.job.local_rank);
  if (started.ok()) {
    rank.server = *std::move(started);
    std::printf("profiler server on %s\n", rank.server->address().c_str());
  } else {
    std::fprintf(stderr, "train_mnist: no profiler server: %s\n",
                 std::string(started.status().message()).c_str());
  }
}

absl::Status LoadData(const Flags& flags, const JobEnv& job,
                      mnist::Dataset& train, mnist::Dataset& test) {
  const int n = flags.batch_size;
  if (flags.fake_data) {
    PODSCOPE_TRACE("make_fake_data");
    // Sized by the job's batch: a job and one process stepping on the
    // same global batches see the same images.
    const int global = flags.spmd ? n : n * job.world_size;
    train = mnist::FakeData(std::max(global * 8, 2048), 1);
    test =
        mnist::FakeData(std::max(n * std::max(flags.test_batches, 1), 256), 2);
  } else {
    const std::string dir = mnist::DefaultDataDir();
    PODSCOPE_ASSIGN_OR_RETURN(auto tr, mnist::LoadIdx(dir, "train"));
    PODSCOPE_ASSIGN_OR_RETURN(auto te, mnist::LoadIdx(dir, "t10k"));
    train = std::move(tr);
    test = std::move(te);
  }
  std::printf("data: %d train / %d test examples%s\n", train.size(),
              test.size(), flags.fake_data ? " (fake)" : "");
  return absl::OkStatus();
}

// The client over the job's devices: from the membership, or (ranks that
// meet through a FileStore) a topology where every process has the same
// devices and global ids go process by process.
absl::Status CreateClient(Rank& rank) {
  PODSCOPE_ASSIGN_OR_RETURN(auto client_options,
                            rt::ClientOptions::FromEnvironment());
  PODSCOPE_ASSIGN_OR_RETURN(auto topology, rt::LocalTopology(client_options));
  const JobEnv& job = rank.job;
  if (job.world_size > 1 && rank.membership == nullptr) {
    const std::vector<rt::DeviceDescription> local = topology.devices;
    topology.process_index = job.rank;
    topology.process_count = job.world_size;
    topology.devices.clear();
    for (int p = 0; p < job.world_size; ++p) {
      for (const rt::DeviceDescription& d : local) {
        rt::DeviceDescription g = d;
        g.id = p * static_cast<int>(local.size()) + d.id;
        g.process_index = p;
        topology.devices.push_back(g);
      }
    }
  }
  PODSCOPE_ASSIGN_OR_RETURN(auto client,
                            rank.membership != nullptr
                                ? rt::CreateClient(client_options)
                                : rt::Client::Create(client_options, topology));
  rank.client = std::move(client);
  return absl::OkStatus();
}

// With several processes: the store (the job's, or a FileStore in
// `store_dir`) and a communicator over it.
absl::Status Connect(const std::string& store_dir, Rank& rank) {
  const JobEnv& job = rank.job;
  rank.prefix = "train_mnist/" + job.session;
  if (job.world_size <= 1) return absl::OkStatus();
  PODSCOPE_TRACE("connect");
  if (rank.membership != nullptr) {
    rank.store = &rank.membership->store();
  } else {
    PODSCOPE_ASSIGN_OR_RETURN(auto opened, rt::OpenFileStore(store_dir));
    rank.file_store = std::move(opened);
    rank.store = rank.file_store.get();
  }
  rt::CommunicatorOptions comm_options;
  comm_options.trace_device = rank.client->addressable_devices()[0];
  PODSCOPE_ASSIGN_OR_RETURN(
      auto comm, rt::Communicator::Create(*rank.store, job.rank, job.world_size,
                                          rank.prefix, comm_options));
  rank.communicator = std::move(comm);
  std::printf("rank %d of %d connected (%s)\n", job.rank, job.world_size,
              rank.membership != nullptr
                  ? ("job coordinator " +
                     rank.membership->environment().coordinator_address)
                        .c_str()
                  : ("store " + store_dir).c_str());
  return absl::OkStatus();
}

// The end of a run: every rank past the last step (rank 0 then deletes
// the job's keys), the trace written, the membership left.
absl::StatusOr<std::string> Finish(Rank& rank, bool delete_keys) {
  if (rank.communicator != nullptr) {
    if (absl::Status s = rank.communicator->Barrier(); !s.ok()) return s;
    if (delete_keys && rank.job.rank == 0) {
      // Everyone is past the rendezvous: the job's keys can go.
      auto keys = rank.store->GetDirectory(rank.prefix + "/");
      if (keys.ok()) {
        for (const auto& [key, value] : *keys) (void)rank.store->Delete(key);
      }
    }
  }
  PODSCOPE_ASSIGN_OR_RETURN(auto path, prof::StopTrace());
  if (rank.membership != nullptr) {
    if (absl::Status s = rank.membership->Shutdown(); !s.ok()) return s;
  }
  return path;
}

absl::Status RunSpmd(const Flags& flags, Rank& rank,
                     const mnist::Dataset& train) {
  if (flags.dropout) {
    return absl::InvalidArgumentError(
        "--spmd trains without dropout (drop --dropout)");
  }
  std::printf("devices: %d in the job (%d here); batch %d, %d steps, spmd\n",
              rank.client->device_count(),
              rank.client->addressable_device_count(), flags.batch_size,
              flags.steps);
  if (absl::Status s =
          TrainSpmd(flags, rank.client.get(), rank.communicator.get(), train);
      !s.ok()) {
    return s;
  }
  PODSCOPE_ASSIGN_OR_RETURN(auto path, Finish(rank, /*delete_keys=*/false));
  std::printf("Trace: %s\n", path.c_str());
  return absl::OkStatus();
}

// Test accuracy over --test_batches batches: {correct, seen}.
absl::StatusOr<std::pair<int, int>> Evaluate(const Flags& flags,
                                             mnist::Trainer& trainer,
                                             const mnist::Dataset& test) {
  int correct = 0, seen = 0;
  if (flags.test_batches <= 0) return std::make_pair(correct, seen);
  PODSCOPE_TRACE("test");
  const int n = flags.batch_size;
  std::vector<int> test_order(test.size());
  std::iota(test_order.begin(), test_order.end(), 0);
  const int batches =
      std::min(flags.test_batches, std::max(test.size() / n, 1));
  std::vector<float> batch_images;
  std::vector<int32_t> batch_labels;
  for (int b = 0; b < batches; ++b) {
    PODSCOPE_TRACE("test_batch", "batch", b);
    mnist::Gather(test, test_order, b * n, n, &batch_images, &batch_labels);
    PODSCOPE_ASSIGN_OR_RETURN(auto predicted, trainer.Predict(batch_images));
    for (int i = 0; i < n; ++i) {
      correct += predicted[i] == batch_labels[i];
      ++seen;
    }
  }
  return std::make_pair(correct, seen);
}

// Trains flags.steps steps on this rank's part of every global batch
// (--batch_size images per rank); returns the seconds they took.
absl::StatusOr<double> TrainSteps(const Flags& flags, const JobEnv& job,
                                  mnist::Trainer& trainer,
                                  const mnist::Dataset& train) {
  using Clock = std::chrono::steady_clock;
  const int n = flags.batch_size;
  const int global = n * job.world_size;
  std::vector<int> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 shuffle_rng(12);
  std::shuffle(order.begin(), order.end(), shuffle_rng);

  std::vector<float> batch_images;
  std::vector<int32_t> batch_labels;
  const auto train_start = Clock::now();
  for (int step = 0; step < flags.steps; ++step) {
    PODSCOPE_STEP(step);
    {
      PODSCOPE_TRACE("train_step_data_prep");
      // This rank's part of the global batch.
      mnist::Gather(train, order, step * global + job.rank * n, n,
                    &batch_images, &batch_labels);
    }
    if (absl::Status s = trainer.Step(batch_images, batch_labels); !s.ok()) {
      return s;
    }
    if (step % flags.log_every == 0 || step + 1 == flags.steps) {
      PODSCOPE_TRACE("read_loss");
      PODSCOPE_ASSIGN_OR_RETURN(auto loss, trainer.LastLoss());
      const double secs =
          std::chrono::duration<double>(Clock::now() - train_start).count();
      std::printf("step %4d  loss %.4f  (%.1f s)\n", step, loss, secs);
      std::fflush(stdout);
    }
  }
  if (absl::Status s = trainer.WaitUntilIdle(); !s.ok()) return s;
  return std::chrono::duration<double>(Clock::now() - train_start).count();
}

// "86, 85, 85" (or "16" when the slices are equal).
std::string SliceSizes(int n, size_t devices) {
  const std::vector<int> sizes =
      mnist::SplitEvenly(n, static_cast<int>(devices));
  if (sizes.front() == sizes.back()) return std::to_string(sizes.front());
  std::string out;
  for (int size : sizes) {
    out += (out.empty() ? "" : ", ") + std::to_string(size);
  }
  return out;
}

// Data-parallel training (mnist/trainer.h) over this process's devices
// and, with several processes, the communicator; then the test accuracy.
absl::Status RunDataParallel(const Flags& flags, Rank& rank,
                             const mnist::Dataset& train,
                             const mnist::Dataset& test,
                             std::chrono::steady_clock::time_point t0) {
  const int n = flags.batch_size;
  const absl::Span<rt::Device* const> devices =
      rank.client->addressable_devices();
  mnist::TrainerOptions trainer_options;
  trainer_options.communicator = rank.communicator.get();
  if (flags.dropout) {
    trainer_options.conv_dropout = 0.25f;
    trainer_options.fc_dropout = 0.5f;
  }
  PODSCOPE_ASSIGN_OR_RETURN(
      auto trainer_or,
      mnist::Trainer::Create(rank.client.get(), devices, trainer_options));
  mnist::Trainer& trainer = *trainer_or;
  std::string device_names;
  for (const rt::Device* device : devices) {
    device_names += (device_names.empty() ? "" : ", ") + device->ToString();
  }
  const int world = rank.job.world_size;
  std::printf(
      "devices: %s; batch %d%s (%s per device)%s, %d steps%s\n",
      device_names.c_str(), n, world > 1 ? " per process" : "",
      SliceSizes(n, devices.size()).c_str(),
      world > 1
          ? absl::StrCat(", ", n * world, " over ", world, " processes").c_str()
          : "",
      flags.steps, flags.dropout ? ", dropout" : "");

  PODSCOPE_ASSIGN_OR_RETURN(auto train_secs,
                            TrainSteps(flags, rank.job, trainer, train));
  PODSCOPE_ASSIGN_OR_RETURN(auto accuracy, Evaluate(flags, trainer, test));
  const auto [correct, seen] = accuracy;

  PODSCOPE_ASSIGN_OR_RETURN(auto hash, ParamsHash(trainer));
  std::printf("params %016llx\n", static_cast<unsigned long long>(hash));
  PODSCOPE_ASSIGN_OR_RETURN(auto path, Finish(rank, /*delete_keys=*/true));
  const rt::CompileCacheStats cache = rank.client->compile_cache_stats();
  std::printf(
      "trained %d steps in %.1f s (%.2f s/step); compiles: %lld "
      "miss, %lld hit\n",
      flags.steps, train_secs, train_secs / flags.steps,
      static_cast<long long>(cache.misses), static_cast<long long>(cache.hits));
  if (seen > 0) {
    std::printf("test accuracy: %.2f%% (%d/%d)\n", 100.0 * correct / seen,
                correct, seen);
  }
  std::printf(
      "total %.1f s\nTrace: %s\n",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count(),
      path.c_str());
  return absl::OkStatus();
}

int Run(const Flags& flags) {
  const auto t0 = std::chrono::steady_clock::now();
  prof::SetThreadName("main");
  Rank rank;
  rank.job = ReadJobEnv();
  const JobEnv& job = rank.job;
  if (job.world_size < 1 || job.rank < 0 || job.rank >= job.world_size) {
    return Fail(absl::InvalidArgumentError("RANK " + std::to_string(job.rank) +
                                           " is not in WORLD_SIZE " +
                                           std::to_string(job.world_size)));
  }
  std::string store_dir = flags.store_dir;
  if (store_dir.empty()) {
    const char* env = std::getenv("PODSCOPE_STORE_DIR");
    if (env != nullptr) store_dir = env;
  }
  if (absl::Status s = JoinJob(flags, store_dir, rank); !s.ok()) return Fail(s);
  StartProfilerServer(flags, rank);

  prof::TraceOptions options;
  options.sampling_hz = 997;
  options.session_id = job.session;
  if (absl::Status s = prof::StartTrace(flags.logdir, options); !s.ok()) {
    return Fail(s);
  }
  mnist::Dataset train, test;
  if (absl::Status s = LoadData(flags, job, train, test); !s.ok()) {
    return Fail(s);
  }
  if (absl::Status s = CreateClient(rank); !s.ok()) return Fail(s);
  const size_t local_devices = rank.client->addressable_devices().size();
  if (!flags.spmd && static_cast<size_t>(flags.batch_size) < local_devices) {
    return Fail(absl::InvalidArgumentError(
        "--batch_size " + std::to_string(flags.batch_size) +
        " (per process) gives no image to some of this process's " +
        std::to_string(local_devices) +
        " devices (CPU_NUM_DEVICES): pass at least " +
        std::to_string(local_devices)));
  }
  if (absl::Status s = Connect(store_dir, rank); !s.ok()) return Fail(s);
  const absl::Status trained =
      flags.spmd ? RunSpmd(flags, rank, train)
                 : RunDataParallel(flags, rank, train, test, t0);
  return trained.ok() ? 0 : Fail(trained);
}

}  // namespace

int main(int argc, char** argv) { return Run(mnist::ParseFlags(argc, argv)); }
