// Inverted dropout. The mask is counter-based: element i is kept when a hash
// of (seed, salt, i) clears the rate, so it needs no state, splits over
// threads freely and is the same in the forward and the gradient.

#include <cstdint>

#include "kernels/kernels.h"
#include "parallel.h"

namespace podscope::runtime::internal {
namespace {

// SplitMix64's finalizer: a bijection whose output bits each depend on all
// input bits.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// 24 uniform bits per element, compared against rate * 2^24.
constexpr int kMaskBits = 24;

uint64_t MaskKey(int32_t seed, int64_t salt) {
  return Mix((uint64_t{static_cast<uint32_t>(seed)} << 32) ^
             Mix(static_cast<uint64_t>(salt) + 0x9e3779b97f4a7c15ull));
}

uint64_t Threshold(float rate) {
  return static_cast<uint64_t>(static_cast<double>(rate) * (1 << kMaskBits) +
                               0.5);
}

bool Keeps(uint64_t key, uint64_t threshold, int64_t index) {
  const uint64_t bits =
      Mix(key + static_cast<uint64_t>(index) * 0x9e3779b97f4a7c15ull);
  return (bits >> (64 - kMaskBits)) >= threshold;
}

// Enough elements per thread to be worth waking the pool.
constexpr int64_t kMinChunk = 1 << 15;

}  // namespace

bool DropoutKeeps(int32_t seed, int64_t salt, float rate, int64_t index) {
  return Keeps(MaskKey(seed, salt), Threshold(rate), index);
}

absl::Status RunDropout(const KernelArgs& args) {
  const OpAttrs& attrs = args.node.attrs;
  const float* x = static_cast<const float*>(args.inputs[0]);
  const int32_t seed = *static_cast<const int32_t*>(args.inputs[1]);
  float* y = static_cast<float*>(args.output);
  const int64_t n = args.input_shapes[0]->num_elements();
  const uint64_t key = MaskKey(seed, attrs.salt);
  const uint64_t threshold = Threshold(attrs.rate);
  // rate 1 drops everything; its scale is never used.
  const float scale = attrs.rate < 1.0f ? 1.0f / (1.0f - attrs.rate) : 0.0f;
  args.pool.ParallelFor(n, kMinChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      y[i] = Keeps(key, threshold, i) ? x[i] * scale : 0.0f;
    }
  });
  return absl::OkStatus();
}

}  // namespace podscope::runtime::internal
