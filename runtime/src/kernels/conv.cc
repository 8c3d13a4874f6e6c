// 2-D convolution (NCHW input, OIHW weights) and its two gradients, by
// im2col and matrix products. Samples are split across the pool's threads,
// each with its own column buffer.

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "parallel.h"

namespace podscope::runtime::internal {
namespace {

using RowMajor =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMajor>;
using Map = Eigen::Map<RowMajor>;

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

// col[(c*KH + i)*KW + j][y*OW + x] = image[c][y*SH - PH + i][x*SW - PW + j].
void Im2Col(const ConvGeometry& g, const float* image, float* col) {
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = col + ((c * g.kh + i) * g.kw + j) * g.pixels();
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + i;
          float* out = row + y * g.ow;
          if (iy < 0 || iy >= g.h) {
            std::fill(out, out + g.ow, 0.0f);
            continue;
          }
          const float* in = image + (c * g.h + iy) * g.w;
          for (int64_t x = 0; x < g.ow; ++x) {
            const int64_t ix = x * g.sw - g.pw + j;
            out[x] = (ix >= 0 && ix < g.w) ? in[ix] : 0.0f;
          }
        }
      }
    }
  }
}

// The adjoint of Im2Col: accumulates columns back into the image.
void Col2Im(const ConvGeometry& g, const float* col, float* image) {
  std::fill(image, image + g.c * g.h * g.w, 0.0f);
  for (int64_t c = 0; c < g.c; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = col + ((c * g.kh + i) * g.kw + j) * g.pixels();
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + i;
          if (iy < 0 || iy >= g.h) continue;
          float* out = image + (c * g.h + iy) * g.w;
          for (int64_t x = 0; x < g.ow; ++x) {
            const int64_t ix = x * g.sw - g.pw + j;
            if (ix >= 0 && ix < g.w) out[ix] += row[y * g.ow + x];
          }
        }
      }
    }
  }
}

// One shard per thread when there are enough samples to share.
int64_t MinSamplesPerShard(const ConvGeometry& g) {
  const int64_t macs_per_sample = g.o * g.patch() * g.pixels();
  return std::max<int64_t>(1, (1 << 16) / (macs_per_sample + 1));
}

void Forward(const ConvGeometry& g, const float* x, const float* w, float* y,
             const IntraOpPool& pool) {
  ConstMap weights(w, g.o, g.patch());
  pool.ParallelFor(g.n, MinSamplesPerShard(g), [&](int64_t b, int64_t e) {
    std::vector<float> col(g.patch() * g.pixels());
    for (int64_t s = b; s < e; ++s) {
      Im2Col(g, x + s * g.c * g.h * g.w, col.data());
      Map out(y + s * g.o * g.pixels(), g.o, g.pixels());
      out.noalias() = weights * ConstMap(col.data(), g.patch(), g.pixels());
    }
  });
}

void BackpropInput(const ConvGeometry& g, const float* dy, const float* w,
                   float* dx, const IntraOpPool& pool) {
  ConstMap weights(w, g.o, g.patch());
  pool.ParallelFor(g.n, MinSamplesPerShard(g), [&](int64_t b, int64_t e) {
    std::vector<float> col(g.patch() * g.pixels());
    for (int64_t s = b; s < e; ++s) {
      Map cols(col.data(), g.patch(), g.pixels());
      cols.noalias() = weights.transpose() *
                       ConstMap(dy + s * g.o * g.pixels(), g.o, g.pixels());
      Col2Im(g, col.data(), dx + s * g.c * g.h * g.w);
    }
  });
}

void BackpropFilter(const ConvGeometry& g, const float* x, const float* dy,
                    float* dw, const IntraOpPool& pool) {
  // Each shard sums its samples' contributions privately; the partial
  // sums are added at the end, so no two threads write the same memory.
  const int64_t shards = pool.num_threads();
  std::vector<RowMajor> partial(shards, RowMajor::Zero(g.o, g.patch()));
  const int64_t per_shard = (g.n + shards - 1) / shards;
  pool.ParallelFor(shards, 1, [&](int64_t first, int64_t last) {
    std::vector<float> col(g.patch() * g.pixels());
    for (int64_t shard = first; shard < last; ++shard) {
      const int64_t end = std::min(g.n, (shard + 1) * per_shard);
      for (int64_t s = shard * per_shard; s < end; ++s) {
        Im2Col(g, x + s * g.c * g.h * g.w, col.data());
        partial[shard].noalias() +=
            ConstMap(dy + s * g.o * g.pixels(), g.o, g.pixels()) *
            ConstMap(col.data(), g.patch(), g.pixels()).transpose();
      }
    }
  });
  Map out(dw, g.o, g.patch());
  out.setZero();
  for (const RowMajor& p : partial) out += p;
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
