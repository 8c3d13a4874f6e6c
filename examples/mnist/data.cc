#include "mnist/data.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/trace.h"

namespace podscope::mnist {
namespace {

// Fashion-MNIST's training-set pixel mean and standard deviation.
constexpr float kMean = 0.2860f;
constexpr float kStd = 0.3530f;

absl::StatusOr<std::vector<uint8_t>> ReadGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", path,
                     " (install dataset-fashion-mnist, set "
                     "PODSCOPE_MNIST_DIR, or use --fake_data)"));
  }
  std::vector<uint8_t> out;
  std::vector<uint8_t> buffer(1 << 16);
  int n;
  while ((n = gzread(f, buffer.data(), buffer.size())) > 0) {
    out.insert(out.end(), buffer.begin(), buffer.begin() + n);
  }
  const bool failed = n < 0;
  gzclose(f);
  if (failed) return absl::DataLossError("cannot decompress " + path);
  return out;
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

std::string DefaultDataDir() {
  const char* env = std::getenv("PODSCOPE_MNIST_DIR");
  return env != nullptr && *env != '\0' ? env
                                        : "/usr/share/datasets/fashion-mnist";
}

absl::StatusOr<Dataset> LoadIdx(const std::string& dir,
                                const std::string& prefix, int limit) {
  PODSCOPE_TRACE("load_idx", "set", prefix);
  const std::string images_path =
      absl::StrCat(dir, "/", prefix, "-images-idx3-ubyte.gz");
  const std::string labels_path =
      absl::StrCat(dir, "/", prefix, "-labels-idx1-ubyte.gz");
  PODSCOPE_ASSIGN_OR_RETURN(auto images, ReadGz(images_path));
  PODSCOPE_ASSIGN_OR_RETURN(auto labels, ReadGz(labels_path));
  if (images.size() < 16 || BigEndian32(images.data()) != 0x803) {
    return absl::DataLossError(
        absl::StrCat(images_path, ": not an idx3 image file"));
  }
  if (labels.size() < 8 || BigEndian32(labels.data()) != 0x801) {
    return absl::DataLossError(
        absl::StrCat(labels_path, ": not an idx1 label file"));
  }
  const uint32_t count = BigEndian32(images.data() + 4);
  if (BigEndian32(labels.data() + 4) != count ||
      BigEndian32(images.data() + 8) != kRows ||
      BigEndian32(images.data() + 12) != kCols ||
      images.size() < 16 + size_t{count} * kPixels ||
      labels.size() < 8 + size_t{count}) {
    return absl::DataLossError(absl::StrCat(images_path, ": expected ", count,
                                            " images of 28x28 matching ",
                                            labels_path));
  }
  const uint32_t n =
      limit > 0 ? std::min<uint32_t>(count, static_cast<uint32_t>(limit))
                : count;
  Dataset d;
  d.images.resize(size_t{n} * kPixels);
  for (size_t i = 0; i < d.images.size(); ++i) {
    d.images[i] = (images[16 + i] / 255.0f - kMean) / kStd;
  }
  d.labels.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const int label = labels[8 + i];
    if (label >= kClasses) {
      return absl::DataLossError(absl::StrCat(labels_path, ": label ", label,
                                              " of example ", i,
                                              " is not a class"));
    }
    d.labels[i] = label;
  }
  return d;
}

Dataset FakeData(int n, uint32_t seed) {
  Dataset d;
  d.images.resize(size_t(n) * kPixels);
  d.labels.resize(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  for (int i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng() % kClasses);
    d.labels[i] = label;
    float* img = &d.images[size_t(i) * kPixels];
    for (int r = 0; r < kRows; ++r) {
      for (int c = 0; c < kCols; ++c) {
        const bool band = r / 3 == label % 9 || c / 3 == (label * 7) % 9;
        img[r * kCols + c] = (band ? 1.5f : -0.5f) + noise(rng);
      }
    }
  }
  return d;
}

void Gather(const Dataset& data, const std::vector<int>& order, int begin,
            int n, std::vector<float>* images, std::vector<int32_t>* labels) {
  images->resize(size_t(n) * kPixels);
  labels->resize(n);
  for (int i = 0; i < n; ++i) {
    const int index = order[(begin + i) % order.size()];
    std::memcpy(images->data() + size_t(i) * kPixels, data.image(index),
                kPixels * sizeof(float));
    (*labels)[i] = data.labels[index];
  }
}

}  // namespace podscope::mnist
