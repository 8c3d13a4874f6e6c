// 2-D convolution (NCHW input, OIHW weights) and its two gradients, by
// im2col and matrix products: blocks of samples are unrolled side by side
// (in parallel across the pool) and multiplied in one Eigen contraction on
// the whole pool, so the products run at the machine's GEMM rate.

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "parallel.h"

namespace podscope::runtime::internal {
namespace {

struct ConvGeometry {
  int64_t n, c, h, w;      // input
  int64_t o, kh, kw;       // weights (O, C, KH, KW)
  int64_t oh, ow;          // output
  int64_t sh, sw, ph, pw;  // stride, padding
  int64_t patch() const { return c * kh * kw; }
  int64_t pixels() const { return oh * ow; }
};

ConvGeometry Geometry(const std::vector<int64_t>& in,
                      const std::vector<int64_t>& weights,
                      const std::vector<int64_t>& out, const OpAttrs& attrs) {
  return ConvGeometry{in[0],           in[1],           in[2],
                      in[3],           weights[0],      weights[2],
                      weights[3],      out[2],          out[3],
                      attrs.stride[0], attrs.stride[1], attrs.padding[0],
                      attrs.padding[1]};
}

// col[(c*KH + i)*KW + j][y*OW + x] = image[c][y*SH - PH + i][x*SW - PW + j],
// rows `ld` floats apart (a sample's columns inside a block of samples).
void Im2Col(const ConvGeometry& g, const float* image, float* col, int64_t ld) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + i;
          float* out = row + y * g.ow;
          if (iy < 0 || iy >= g.h) {
            std::fill(out, out + g.ow, 0.0f);
            continue;
          }
          const float* in = image + (c * g.h + iy) * g.w;
          if (g.sw == 1) {
            // The valid range of x, copied in one run.
            const int64_t lo = std::clamp<int64_t>(g.pw - j, 0, g.ow);
            const int64_t hi = std::clamp<int64_t>(g.w + g.pw - j, lo, g.ow);
            std::fill(out, out + lo, 0.0f);
            std::copy(in + lo - g.pw + j, in + hi - g.pw + j, out + lo);
            std::fill(out + hi, out + g.ow, 0.0f);
            continue;
          }
          for (int64_t x = 0; x < g.ow; ++x) {
            const int64_t ix = x * g.sw - g.pw + j;
            out[x] = (ix >= 0 && ix < g.w) ? in[ix] : 0.0f;
          }
        }
      }
    }
  }
}

// The adjoint of Im2Col: accumulates columns (rows `ld` apart) back into
// the image.
void Col2Im(const ConvGeometry& g, const float* col, int64_t ld, float* image) {
  std::fill(image, image + g.c * g.h * g.w, 0.0f);
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + i;
          if (iy < 0 || iy >= g.h) continue;
          float* out = image + (c * g.h + iy) * g.w;
          const float* in = row + y * g.ow;
          if (g.sw == 1) {
            const int64_t lo = std::clamp<int64_t>(g.pw - j, 0, g.ow);
            const int64_t hi = std::clamp<int64_t>(g.w + g.pw - j, lo, g.ow);
            float* dst = out - g.pw + j;
            for (int64_t x = lo; x < hi; ++x) dst[x] += in[x];
            continue;
          }
          for (int64_t x = 0; x < g.ow; ++x) {
            const int64_t ix = x * g.sw - g.pw + j;
            if (ix >= 0 && ix < g.w) out[ix] += in[x];
          }
        }
      }
    }
  }
}

// Convolutions run as matrix products over blocks of samples: the block's
// im2col columns side by side ([patch, block * pixels]) so that one product
// through Eigen's contraction on the whole pool covers many samples. A
// block's columns are kept to about 16 MB.
int64_t BlockSamples(const ConvGeometry& g) {
  constexpr int64_t kBlockFloats = int64_t{4} << 20;
  return std::clamp<int64_t>(kBlockFloats / (g.patch() * g.pixels()), 1, g.n);
}

// Scratch reused across calls on the same (stream) thread: large blocks are
// not returned to the system and faulted in again at every kernel.
float* Scratch(int slot, int64_t floats) {
  thread_local std::vector<float> buffers[3];
  std::vector<float>& buffer = buffers[slot];
  if (static_cast<int64_t>(buffer.size()) < floats) buffer.resize(floats);
  return buffer.data();
}

using ConstTensor =
    Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>>;
using Tensor2 = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
using Pair = Eigen::IndexPair<int>;

// [o][s * pixels + p] <-> sample s's [o][p] (NCHW), for samples
// [first, first + count).
void GatherSamples(const ConvGeometry& g, const float* nchw, int64_t first,
                   int64_t count, float* block, const IntraOpPool& pool) {
  const int64_t ld = count * g.pixels();
  pool.ParallelFor(count, 1, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      const float* src = nchw + (first + s) * g.o * g.pixels();
      for (int64_t o = 0; o < g.o; ++o) {
        std::copy(src + o * g.pixels(), src + (o + 1) * g.pixels(),
                  block + o * ld + s * g.pixels());
      }
    }
  });
}

void ScatterSamples(const ConvGeometry& g, const float* block, int64_t first,
                    int64_t count, float* nchw, const IntraOpPool& pool) {
  const int64_t ld = count * g.pixels();
  pool.ParallelFor(count, 1, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      float* dst = nchw + (first + s) * g.o * g.pixels();
      for (int64_t o = 0; o < g.o; ++o) {
        const float* src = block + o * ld + s * g.pixels();
        std::copy(src, src + g.pixels(), dst + o * g.pixels());
      }
    }
  });
}

void Im2ColBlock(const ConvGeometry& g, const float* x, int64_t first,
                 int64_t count, float* col, const IntraOpPool& pool) {
  const int64_t ld = count * g.pixels();
  pool.ParallelFor(count, 1, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      Im2Col(g, x + (first + s) * g.c * g.h * g.w, col + s * g.pixels(), ld);
    }
  });
}

void Forward(const ConvGeometry& g, const float* x, const float* w, float* y,
             const IntraOpPool& pool) {
  const int64_t block = BlockSamples(g);
  ConstTensor weights(w, g.o, g.patch());
  float* col = Scratch(0, g.patch() * block * g.pixels());
  float* out = Scratch(1, g.o * block * g.pixels());
  for (int64_t first = 0; first < g.n; first += block) {
    const int64_t count = std::min(block, g.n - first);
    const int64_t ld = count * g.pixels();
    Im2ColBlock(g, x, first, count, col, pool);
    Tensor2 result(out, g.o, ld);
    result.device(pool.device()) = weights.contract(
        ConstTensor(col, g.patch(), ld), Eigen::array<Pair, 1>{Pair(1, 0)});
    ScatterSamples(g, out, first, count, y, pool);
  }
}

void BackpropInput(const ConvGeometry& g, const float* dy, const float* w,
                   float* dx, const IntraOpPool& pool) {
  const int64_t block = BlockSamples(g);
  ConstTensor weights(w, g.o, g.patch());
  float* grad = Scratch(1, g.o * block * g.pixels());
  float* col = Scratch(0, g.patch() * block * g.pixels());
  for (int64_t first = 0; first < g.n; first += block) {
    const int64_t count = std::min(block, g.n - first);
    const int64_t ld = count * g.pixels();
    GatherSamples(g, dy, first, count, grad, pool);
    Tensor2 cols(col, g.patch(), ld);
    // weights^T * grad: contract the output channels.
    cols.device(pool.device()) = weights.contract(
        ConstTensor(grad, g.o, ld), Eigen::array<Pair, 1>{Pair(0, 0)});
    pool.ParallelFor(count, 1, [&](int64_t b, int64_t e) {
      for (int64_t s = b; s < e; ++s) {
        Col2Im(g, col + s * g.pixels(), ld, dx + (first + s) * g.c * g.h * g.w);
      }
    });
  }
}

// The filter gradient's product has a small result ([O, patch]) and a long
// contraction (the block's pixels), which a threaded contraction splits
// poorly: each thread instead multiplies its own range of the pixels into a
// private sum, and the sums are added at the end.
void BackpropFilter(const ConvGeometry& g, const float* x, const float* dy,
                    float* dw, const IntraOpPool& pool) {
  using RowMajor =
      Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Strided = Eigen::Map<const RowMajor, 0, Eigen::OuterStride<>>;
  using Sum = Eigen::Map<RowMajor>;
  const int64_t block = BlockSamples(g);
  const int64_t threads = pool.num_threads();
  const int64_t size = g.o * g.patch();
  float* col = Scratch(0, g.patch() * block * g.pixels());
  float* grad = Scratch(1, g.o * block * g.pixels());
  float* partial = Scratch(2, threads * size);
  std::fill(partial, partial + threads * size, 0.0f);
  for (int64_t first = 0; first < g.n; first += block) {
    const int64_t count = std::min(block, g.n - first);
    const int64_t ld = count * g.pixels();
    Im2ColBlock(g, x, first, count, col, pool);
    GatherSamples(g, dy, first, count, grad, pool);
    const int64_t per_thread = (ld + threads - 1) / threads;
    pool.ParallelFor(threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t lo = t * per_thread;
        const int64_t len = std::min(ld, lo + per_thread) - lo;
        if (len <= 0) continue;
        Sum(partial + t * size, g.o, g.patch()).noalias() +=
            Strided(grad + lo, g.o, len, Eigen::OuterStride<>(ld)) *
            Strided(col + lo, g.patch(), len, Eigen::OuterStride<>(ld))
                .transpose();
      }
    });
  }
  std::copy(partial, partial + size, dw);
  for (int64_t t = 1; t < threads; ++t) {
    for (int64_t i = 0; i < size; ++i) dw[i] += partial[t * size + i];
  }
}

}  // namespace

absl::Status RunConv(const KernelArgs& args) {
  const Node& node = args.node;
  const auto& s0 = args.input_shapes[0]->dims();
  const auto& s1 = args.input_shapes[1]->dims();
  const float* a = static_cast<const float*>(args.inputs[0]);
  const float* b = static_cast<const float*>(args.inputs[1]);
  float* out = static_cast<float*>(args.output);
  switch (node.op) {
    case OpKind::kConv2D:  // (input, weights)
      Forward(Geometry(s0, s1, node.shape.dims(), node.attrs), a, b, out,
              args.pool);
      break;
    case OpKind::kConv2DBackpropInput:  // (grad_out, weights)
      BackpropInput(Geometry(node.shape.dims(), s1, s0, node.attrs), a, b, out,
                    args.pool);
      break;
    case OpKind::kConv2DBackpropFilter:  // (input, grad_out)
      BackpropFilter(Geometry(s0, node.shape.dims(), s1, node.attrs), a, b, out,
                     args.pool);
      break;
    default:
      return absl::InternalError("not a convolution");
  }
  return absl::OkStatus();
}

}  // namespace podscope::runtime::internal
