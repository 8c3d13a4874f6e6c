#include "mnist/train_flags.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace podscope::mnist {
namespace {

constexpr char kUsage[] =
    "usage: train_mnist [--logdir DIR] [--steps N] [--test_batches N] "
    "[--log_every N]\n"
    "                   [--batch_size N] [--dropout] [--fake_data] "
    "[--profiler_port N]\n"
    "                   [--store_dir DIR] [--spmd]\n";

constexpr char kHelp[] =
    "\nTrains the seed's MNIST CNN on Podscope's runtime, profiled end to "
    "end.\n"
    "\n"
    "  --logdir DIR         where the trace goes (default out/train)\n"
    "  --steps N            training steps (default 30)\n"
    "  --test_batches N     batches of the test set to evaluate (default 4)\n"
    "  --log_every N        print the loss every N steps (default 5)\n"
    "  --batch_size N       images per step of EACH PROCESS (default 256), as\n"
    "                       in PyTorch: a job of W processes steps on W x N\n"
    "                       images. A process's batch is split over its\n"
    "                       devices (CPU_NUM_DEVICES) as evenly as it can be,\n"
    "                       the last slices one image smaller (256 over 3:\n"
    "                       86, 85, 85); the loss, the gradient and the\n"
    "                       accuracy are over every real image. With --spmd\n"
    "                       it is the job's global batch instead, one program\n"
    "                       over all of it (PyTorch/XLA SPMD's convention).\n"
    "  --dropout            the seed's dropout layers\n"
    "  --fake_data          synthetic images instead of Fashion-MNIST\n"
    "  --profiler_port N    the profiler server's port, + LOCAL_RANK (default\n"
    "                       9012; 0 picks a free one, -1 serves none)\n"
    "  --store_dir DIR      ranks meet through a FileStore in DIR\n"
    "  --spmd               the seed's SPMD example\n"
    "\n"
    "Several processes: run it under `podscope launch --nproc_per_node P` (or\n"
    "torchrun), which sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.\n";

[[noreturn]] void Usage(const char* problem) {
  std::fprintf(stderr, "train_mnist: %s\n%s", problem, kUsage);
  std::exit(2);
}

}  // namespace

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) Usage(("missing value for " + arg).c_str());
      return argv[++i];
    };
    auto next_int = [&](int min) {
      const std::string v = next();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < min || n > 1000000) {
        Usage(("bad value for " + arg + ": " + v).c_str());
      }
      return static_cast<int>(n);
    };
    if (arg == "--logdir") {
      flags.logdir = next();
    } else if (arg == "--steps") {
      flags.steps = next_int(1);
    } else if (arg == "--test_batches") {
      flags.test_batches = next_int(0);
    } else if (arg == "--log_every") {
      flags.log_every = next_int(1);
    } else if (arg == "--batch_size") {
      flags.batch_size = next_int(1);
    } else if (arg == "--dropout") {
      flags.dropout = true;
    } else if (arg == "--fake_data") {
      flags.fake_data = true;
    } else if (arg == "--profiler_port") {
      flags.profiler_port = next_int(-1);
    } else if (arg == "--store_dir") {
      flags.store_dir = next();
    } else if (arg == "--spmd") {
      flags.spmd = true;
    } else if (arg == "-h" || arg == "--help") {
      std::printf("%s%s", kUsage, kHelp);
      std::exit(0);
    } else {
      Usage(("unknown flag " + arg).c_str());
    }
  }
  return flags;
}

}  // namespace podscope::mnist
