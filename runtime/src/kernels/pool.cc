// 2-D max pooling over NCHW and its gradient. Padded positions never win.

#include <algorithm>
#include <limits>

#include "kernels/kernels.h"
#include "parallel.h"

namespace podscope::runtime::internal {
namespace {

struct PoolGeometry {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
};

// Index within the plane of the first maximum of window (y, x), or -1 if
// the window lies entirely in padding.
int64_t ArgMaxInWindow(const PoolGeometry& g, const float* plane, int64_t y,
                       int64_t x) {
  int64_t best = -1;
  float best_value = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t iy = y * g.sh - g.ph + i;
    if (iy < 0 || iy >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t ix = x * g.sw - g.pw + j;
      if (ix < 0 || ix >= g.w) continue;
      const float v = plane[iy * g.w + ix];
      if (best < 0 || v > best_value) {
        best = iy * g.w + ix;
        best_value = v;
      }
    }
  }
  return best;
}

}  // namespace

absl::Status RunPool(const KernelArgs& args) {
  const Node& node = args.node;
  const Shape& in = *args.input_shapes[0];
  const bool grad = node.op == OpKind::kMaxPool2DGrad;
  const Shape& out = grad ? *args.input_shapes[1] : node.shape;
  const OpAttrs& a = node.attrs;
  const PoolGeometry g{in.dim(0) * in.dim(1),
                       in.dim(2),
                       in.dim(3),
                       out.dim(2),
                       out.dim(3),
                       a.window[0],
                       a.window[1],
                       a.stride[0],
                       a.stride[1],
                       a.padding[0],
                       a.padding[1]};
  const float* x = static_cast<const float*>(args.inputs[0]);
  const float* dy = grad ? static_cast<const float*>(args.inputs[1]) : nullptr;
  float* result = static_cast<float*>(args.output);
  const int64_t min_planes =
      std::max<int64_t>(1, (1 << 15) / (g.oh * g.ow * g.kh * g.kw + 1));
  args.pool.ParallelFor(g.planes, min_planes, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const float* plane = x + p * g.h * g.w;
      if (grad) {
        float* dx = result + p * g.h * g.w;
        std::fill(dx, dx + g.h * g.w, 0.0f);
        for (int64_t y = 0; y < g.oh; ++y) {
          for (int64_t xo = 0; xo < g.ow; ++xo) {
            const int64_t best = ArgMaxInWindow(g, plane, y, xo);
            if (best >= 0) dx[best] += dy[(p * g.oh + y) * g.ow + xo];
          }
        }
      } else {
        for (int64_t y = 0; y < g.oh; ++y) {
          for (int64_t xo = 0; xo < g.ow; ++xo) {
            const int64_t best = ArgMaxInWindow(g, plane, y, xo);
            result[(p * g.oh + y) * g.ow + xo] = best >= 0 ? plane[best] : 0.0f;
          }
        }
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace podscope::runtime::internal
