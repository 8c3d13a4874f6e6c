// examples/train_mnist's command line: its flags, --help and usage.
#ifndef PODSCOPE_EXAMPLES_MNIST_TRAIN_FLAGS_H_
#define PODSCOPE_EXAMPLES_MNIST_TRAIN_FLAGS_H_

#include <string>

namespace podscope::mnist {

struct Flags {
  std::string logdir = "out/train";
  int steps = 30;
  int test_batches = 4;
  int log_every = 5;
  // Per process, as in PyTorch; with --spmd the job's global batch.
  int batch_size = 256;
  bool dropout = false;
  bool fake_data = false;
  // The profiler server's port; 0 picks a free one, -1 serves none.
  int profiler_port = 9012;
  std::string store_dir;  // see train_mnist.cc
  bool spmd = false;
};

// The flags of argv; prints --help and exits 0, or names a bad flag with
// the usage and exits 2.
Flags ParseFlags(int argc, char** argv);

}  // namespace podscope::mnist

#endif  // PODSCOPE_EXAMPLES_MNIST_TRAIN_FLAGS_H_
