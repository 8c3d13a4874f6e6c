// Fashion-MNIST for the training examples, tests and benchmarks: the idx
// files of Debian's dataset-fashion-mnist package, or a deterministic
// synthetic stand-in of the same shape.
#ifndef PODSCOPE_EXAMPLES_MNIST_DATA_H_
#define PODSCOPE_EXAMPLES_MNIST_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace podscope::mnist {

inline constexpr int kRows = 28;
inline constexpr int kCols = 28;
inline constexpr int kPixels = kRows * kCols;
inline constexpr int kClasses = 10;

// Images normalized to f32 (n x 784, row-major) and their labels.
struct Dataset {
  std::vector<float> images;
  std::vector<int32_t> labels;
  int size() const { return static_cast<int>(labels.size()); }
  const float* image(int i) const { return &images[size_t(i) * kPixels]; }
};

// $PODSCOPE_MNIST_DIR, else where the Debian package installs the files
// (/usr/share/datasets/fashion-mnist).
std::string DefaultDataDir();

// Reads <dir>/<prefix>-images-idx3-ubyte.gz and the matching labels
// (prefix "train" or "t10k"), keeping at most `limit` examples (0: all).
// Errors name the file and what was wrong with it.
absl::StatusOr<Dataset> LoadIdx(const std::string& dir,
                                const std::string& prefix, int limit = 0);

// `n` examples: each class lights its own horizontal band and vertical
// stripe over noise, so a model can learn them.
Dataset FakeData(int n, uint32_t seed);

// The examples order[(begin + i) % order.size()] for i in [0, n), copied
// into one batch (images n x 784, labels n).
void Gather(const Dataset& data, const std::vector<int>& order, int begin,
            int n, std::vector<float>* images, std::vector<int32_t>* labels);

}  // namespace podscope::mnist

#endif  // PODSCOPE_EXAMPLES_MNIST_DATA_H_
