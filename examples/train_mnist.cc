// The seed's MNIST CNN trained on Podscope's embedded runtime with its lazy
// (PyTorch/XLA-style) tensor API, profiled end to end: host scopes for the
// phases of each step, and the runtime's compiles, transfers and every
// kernel on the device stream track, named after the user scopes.
//
//   train_mnist [--logdir DIR] [--steps N] [--test_batches N]
//               [--log_every N] [--batch_size N] [--fake_data]
//
// Data: Fashion-MNIST from Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist, or $PODSCOPE_MNIST_DIR), or with
// --fake_data a deterministic synthetic set of the same shape.
//
// Model (as the seed's MNISTNet, without dropout): conv 32 3x3 -> relu ->
// conv 64 3x3 -> relu -> max_pool 2 -> flatten -> fc 128 -> relu -> fc 10
// -> log_softmax; NLL loss; SGD with momentum 0.5, lr 0.01; batch 256.
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/client.h"
#include "podscope/runtime/lazy.h"
#include "podscope/runtime/scope.h"

namespace {

namespace rt = podscope::runtime;
namespace prof = podscope::profiler;

constexpr int kRows = 28;
constexpr int kCols = 28;
constexpr int kPixels = kRows * kCols;
constexpr int kClasses = 10;
// Fashion-MNIST's training-set pixel mean and standard deviation.
constexpr float kMean = 0.2860f;
constexpr float kStd = 0.3530f;

struct Flags {
  std::string logdir = "out/train";
  int steps = 30;
  int test_batches = 4;
  int log_every = 5;
  int batch_size = 256;
  bool fake_data = false;
};

[[noreturn]] void Usage(const char* problem) {
  std::fprintf(stderr,
               "train_mnist: %s\nusage: train_mnist [--logdir DIR] "
               "[--steps N] [--test_batches N] [--log_every N] "
               "[--batch_size N] [--fake_data]\n",
               problem);
  std::exit(2);
}

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
    } else if (arg == "--fake_data") {
      flags.fake_data = true;
    } else if (arg == "-h" || arg == "--help") {
      Usage("help");
    } else {
      Usage(("unknown flag " + arg).c_str());
    }
  }
  return flags;
}

// Images normalized to f32 (n x 784) and labels.
struct Dataset {
  std::vector<float> images;
  std::vector<int32_t> labels;
  int size() const { return static_cast<int>(labels.size()); }
};

absl::StatusOr<std::vector<uint8_t>> ReadGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError("cannot open " + path +
                               " (install dataset-fashion-mnist, set "
                               "PODSCOPE_MNIST_DIR, or use --fake_data)");
  }
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    out.insert(out.end(), buf, buf + n);
  const bool failed = n < 0;
  gzclose(f);
  if (failed) return absl::DataLossError("cannot decompress " + path);
  return out;
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

absl::StatusOr<Dataset> LoadIdx(const std::string& dir,
                                const std::string& prefix) {
  PODSCOPE_TRACE("load_idx", "set", prefix);
  auto images = ReadGz(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  if (!images.ok()) return images.status();
  auto labels = ReadGz(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (!labels.ok()) return labels.status();
  if (images->size() < 16 || BigEndian32(images->data()) != 0x803 ||
      labels->size() < 8 || BigEndian32(labels->data()) != 0x801) {
    return absl::DataLossError("not an idx image/label pair: " + prefix);
  }
  const uint32_t n = BigEndian32(images->data() + 4);
  if (BigEndian32(labels->data() + 4) != n ||
      BigEndian32(images->data() + 8) != kRows ||
      BigEndian32(images->data() + 12) != kCols ||
      images->size() < 16 + size_t{n} * kPixels || labels->size() < 8 + n) {
    return absl::DataLossError("idx sizes do not match: " + prefix);
  }
  Dataset d;
  d.images.resize(size_t{n} * kPixels);
  for (size_t i = 0; i < d.images.size(); ++i) {
    d.images[i] = ((*images)[16 + i] / 255.0f - kMean) / kStd;
  }
  d.labels.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const int label = (*labels)[8 + i];
    if (label >= kClasses) return absl::DataLossError("label out of range");
    d.labels[i] = label;
  }
  return d;
}

// A deterministic, learnable stand-in: each class lights a different
// horizontal band and vertical stripe over noise.
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

// PyTorch's default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
rt::Tensor Init(rt::LazyContext& ctx, std::vector<int64_t> dims, int64_t fan_in,
                std::mt19937& rng) {
  rt::Literal literal(rt::F32Shape(std::move(dims)));
  const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  std::uniform_real_distribution<float> dist(-bound, bound);
  for (float& v : literal.mutable_data<float>()) v = dist(rng);
  return ctx.FromLiteral(literal);
}

struct Model {
  // conv1 w, conv1 b, conv2 w, conv2 b, fc1 w, fc1 b, fc2 w, fc2 b.
  std::vector<rt::Tensor> params;

  static Model Create(rt::LazyContext& ctx, uint32_t seed) {
    std::mt19937 rng(seed);
    Model m;
    m.params = {Init(ctx, {32, 1, 3, 3}, 1 * 9, rng),
                Init(ctx, {32}, 1 * 9, rng),
                Init(ctx, {64, 32, 3, 3}, 32 * 9, rng),
                Init(ctx, {64}, 32 * 9, rng),
                Init(ctx, {9216, 128}, 9216, rng),
                Init(ctx, {128}, 9216, rng),
                Init(ctx, {128, kClasses}, 128, rng),
                Init(ctx, {kClasses}, 128, rng)};
    return m;
  }

  // x: f32[n, 1, 28, 28] -> log probabilities f32[n, 10].
  rt::Tensor Forward(const rt::Tensor& x) const {
    rt::ScopedName forward("forward");
    const auto& p = params;
    rt::Tensor h;
    {
      rt::ScopedName s("conv1");
      h = rt::Relu(rt::Conv2D(x, p[0]) + rt::Reshape(p[1], {1, 32, 1, 1}));
    }
    {
      rt::ScopedName s("conv2");
      h = rt::Relu(rt::Conv2D(h, p[2]) + rt::Reshape(p[3], {1, 64, 1, 1}));
    }
    {
      rt::ScopedName s("pool");
      h = rt::Flatten(rt::MaxPool2D(h, {2, 2}));
    }
    {
      rt::ScopedName s("fc1");
      h = rt::Relu(rt::Matmul(h, p[4]) + p[5]);
    }
    rt::ScopedName s("fc2");
    return rt::LogSoftmax(rt::Matmul(h, p[6]) + p[7], 1);
  }
};

// Copies examples order[begin, begin + n) into one batch.
void Gather(const Dataset& d, const std::vector<int>& order, int begin, int n,
            rt::Literal* images, std::vector<int32_t>* labels) {
  float* dst = images->mutable_data<float>().data();
  labels->resize(n);
  for (int i = 0; i < n; ++i) {
    const int index = order[(begin + i) % order.size()];
    std::memcpy(dst + size_t(i) * kPixels, &d.images[size_t(index) * kPixels],
                kPixels * sizeof(float));
    (*labels)[i] = d.labels[index];
  }
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "train_mnist: %s\n", status.ToString().c_str());
  if (prof::IsTracing()) (void)prof::StopTrace();
  return 1;
}

int Run(const Flags& flags) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  prof::SetThreadName("main");

  prof::TraceOptions options;
  options.sampling_hz = 997;
  if (absl::Status s = prof::StartTrace(flags.logdir, options); !s.ok()) {
    return Fail(s);
  }

  Dataset train, test;
  if (flags.fake_data) {
    PODSCOPE_TRACE("make_fake_data");
    train = FakeData(std::max(flags.batch_size * 8, 2048), 1);
    test = FakeData(
        std::max(flags.batch_size * std::max(flags.test_batches, 1), 256), 2);
  } else {
    const char* env = std::getenv("PODSCOPE_MNIST_DIR");
    const std::string dir =
        env != nullptr ? env : "/usr/share/datasets/fashion-mnist";
    auto tr = LoadIdx(dir, "train");
    if (!tr.ok()) return Fail(tr.status());
    auto te = LoadIdx(dir, "t10k");
    if (!te.ok()) return Fail(te.status());
    train = *std::move(tr);
    test = *std::move(te);
  }
  std::printf("data: %d train / %d test examples%s\n", train.size(),
              test.size(), flags.fake_data ? " (fake)" : "");

  auto client = rt::CreateClient();
  if (!client.ok()) return Fail(client.status());
  rt::Device* device = (*client)->addressable_devices()[0];
  auto ctx_or = rt::LazyContext::Create(client->get(), device);
  if (!ctx_or.ok()) return Fail(ctx_or.status());
  rt::LazyContext& ctx = **ctx_or;
  std::printf("device: %s, batch %d, %d steps\n", device->ToString().c_str(),
              flags.batch_size, flags.steps);

  const float lr = 0.01f;
  const float momentum = 0.5f;
  Model model = Model::Create(ctx, 12);
  std::vector<rt::Tensor> velocity;  // momentum buffers, created at step 0

  std::vector<int> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 shuffle_rng(12);
  std::shuffle(order.begin(), order.end(), shuffle_rng);

  const int n = flags.batch_size;
  rt::Literal batch_images(rt::F32Shape({n, 1, kRows, kCols}));
  std::vector<int32_t> batch_labels;
  const auto train_start = Clock::now();
  for (int step = 0; step < flags.steps; ++step) {
    PODSCOPE_TRACE("train_step", "step", step);
    rt::Tensor output, target, loss;
    {
      PODSCOPE_TRACE("train_step_data_prep_and_forward");
      Gather(train, order, step * n, n, &batch_images, &batch_labels);
      rt::Tensor data = ctx.FromLiteral(batch_images);
      target = ctx.FromVector<int32_t>({n}, batch_labels);
      output = model.Forward(data);
    }
    std::vector<rt::Tensor> grads;
    {
      PODSCOPE_TRACE("train_step_loss_and_backward");
      rt::ScopedName s("backward");
      loss = rt::NllLoss(output, target);
      auto g = rt::Grad(loss, model.params);
      if (!g.ok()) return Fail(g.status());
      grads = *std::move(g);
    }
    {
      PODSCOPE_TRACE("train_step_optimizer_step_host");
      rt::ScopedName s("optimizer");
      // PyTorch's SGD: v = momentum * v + g; w -= lr * v (v = g at first).
      for (size_t i = 0; i < model.params.size(); ++i) {
        if (velocity.size() < model.params.size()) {
          velocity.push_back(grads[i]);
        } else {
          velocity[i] = velocity[i] * momentum + grads[i];
        }
        model.params[i] = model.params[i] - velocity[i] * lr;
      }
    }
    {
      PODSCOPE_TRACE("sync");
      if (absl::Status s = ctx.Sync(); !s.ok()) return Fail(s);
    }
    if (step % flags.log_every == 0 || step + 1 == flags.steps) {
      PODSCOPE_TRACE("read_loss");
      auto value = loss.Item();
      if (!value.ok()) return Fail(value.status());
      const double secs =
          std::chrono::duration<double>(Clock::now() - train_start).count();
      std::printf("step %4d  loss %.4f  (%.1f s)\n", step, *value, secs);
      std::fflush(stdout);
    }
  }
  if (absl::Status s = device->WaitUntilIdle(); !s.ok()) return Fail(s);
  const double train_secs =
      std::chrono::duration<double>(Clock::now() - train_start).count();

  int correct = 0, seen = 0;
  if (flags.test_batches > 0) {
    PODSCOPE_TRACE("test");
    std::vector<int> test_order(test.size());
    std::iota(test_order.begin(), test_order.end(), 0);
    const int batches =
        std::min(flags.test_batches, std::max(test.size() / n, 1));
    for (int b = 0; b < batches; ++b) {
      PODSCOPE_TRACE("test_batch", "batch", b);
      Gather(test, test_order, b * n, n, &batch_images, &batch_labels);
      rt::Tensor logits = model.Forward(ctx.FromLiteral(batch_images));
      if (absl::Status s = ctx.Sync(); !s.ok()) return Fail(s);
      auto values = logits.ToVector<float>();
      if (!values.ok()) return Fail(values.status());
      for (int i = 0; i < n; ++i) {
        const float* row = values->data() + size_t(i) * kClasses;
        const int predicted =
            static_cast<int>(std::max_element(row, row + kClasses) - row);
        correct += predicted == batch_labels[i];
        ++seen;
      }
    }
  }

  auto path = prof::StopTrace();
  if (!path.ok()) return Fail(path.status());
  const rt::CompileCacheStats cache = (*client)->compile_cache_stats();
  std::printf(
      "trained %d steps in %.1f s (%.2f s/step); compiles: %lld "
      "miss, %lld hit\n",
      flags.steps, train_secs, train_secs / flags.steps,
      static_cast<long long>(cache.misses), static_cast<long long>(cache.hits));
  if (seen > 0) {
    std::printf("test accuracy: %.2f%% (%d/%d)\n", 100.0 * correct / seen,
                correct, seen);
  }
  std::printf("total %.1f s\nTrace: %s\n",
              std::chrono::duration<double>(Clock::now() - t0).count(),
              path->c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(ParseFlags(argc, argv)); }
