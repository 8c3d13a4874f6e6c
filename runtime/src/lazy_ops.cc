// Tensor ops: each lowers its operands into the pending step graph and
// records one builder op (plus NumPy-style broadcasts for binary ops).

#include <functional>

#include "absl/strings/str_cat.h"
#include "lazy_internal.h"
#include "podscope/runtime/autodiff.h"
#include "podscope/runtime/lazy.h"

namespace podscope::runtime {
namespace {

// The context of the first defined operand.
LazyContext* ContextOf(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (t->context() != nullptr) return t->context();
  }
  return nullptr;
}

absl::StatusOr<std::vector<int64_t>> BroadcastDims(absl::string_view op,
                                                   const Shape& a,
                                                   const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a.rank());
    const int ib = i - (rank - b.rank());
    const int64_t da = ia >= 0 ? a.dim(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": cannot broadcast ", a.ToString(), " with ", b.ToString()));
    }
    dims[i] = da == 1 ? db : da;
  }
  return dims;
}

using Unary = std::function<Value(GraphBuilder&, Value)>;
using Binary = std::function<Value(GraphBuilder&, Value, Value)>;

Tensor ApplyUnary(const Tensor& x, const Unary& op) {
  LazyContext* ctx = x.context();
  if (ctx == nullptr) return Tensor();
  absl::StatusOr<Value> v = ctx->Lower(x);
  if (!v.ok()) return ctx->ErrorTensor(v.status());
  return ctx->Wrap(op(ctx->builder(), *v));
}

Tensor ApplyBinary(absl::string_view name, const Tensor& a, const Tensor& b,
                   const Binary& op) {
  LazyContext* ctx = ContextOf({&a, &b});
  if (ctx == nullptr) return Tensor();
  absl::StatusOr<Value> va = ctx->Lower(a);
  if (!va.ok()) return ctx->ErrorTensor(va.status());
  absl::StatusOr<Value> vb = ctx->Lower(b);
  if (!vb.ok()) return ctx->ErrorTensor(vb.status());
  GraphBuilder& builder = ctx->builder();
  auto dims = BroadcastDims(name, builder.shape(*va), builder.shape(*vb));
  if (!dims.ok()) return ctx->ErrorTensor(dims.status());
  Value lhs = builder.BroadcastTo(*va, *dims);
  Value rhs = builder.BroadcastTo(*vb, *dims);
  return ctx->Wrap(op(builder, lhs, rhs));
}

Tensor ApplyScalar(absl::string_view name, const Tensor& a, float b,
                   const Binary& op) {
  LazyContext* ctx = a.context();
  if (ctx == nullptr) return Tensor();
  absl::StatusOr<Value> va = ctx->Lower(a);
  if (!va.ok()) return ctx->ErrorTensor(va.status());
  GraphBuilder& builder = ctx->builder();
  Value scalar = builder.Full(builder.shape(*va), b);
  return ctx->Wrap(op(builder, *va, scalar));
}

}  // namespace

Tensor operator+(const Tensor& a, const Tensor& b) {
  return ApplyBinary("add", a, b, &GraphBuilder::Add);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return ApplyBinary("sub", a, b, &GraphBuilder::Sub);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return ApplyBinary("mul", a, b, &GraphBuilder::Mul);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return ApplyBinary("div", a, b, &GraphBuilder::Div);
}
Tensor operator+(const Tensor& a, float b) {
  return ApplyScalar("add", a, b, &GraphBuilder::Add);
}
Tensor operator-(const Tensor& a, float b) {
  return ApplyScalar("sub", a, b, &GraphBuilder::Sub);
}
Tensor operator*(const Tensor& a, float b) {
  return ApplyScalar("mul", a, b, &GraphBuilder::Mul);
}
Tensor operator/(const Tensor& a, float b) {
  return ApplyScalar("div", a, b, &GraphBuilder::Div);
}
Tensor operator*(float a, const Tensor& b) { return b * a; }
Tensor operator-(const Tensor& x) { return ApplyUnary(x, &GraphBuilder::Neg); }

Tensor Maximum(const Tensor& a, const Tensor& b) {
  return ApplyBinary("max", a, b, &GraphBuilder::Max);
}
Tensor Exp(const Tensor& x) { return ApplyUnary(x, &GraphBuilder::Exp); }
Tensor Log(const Tensor& x) { return ApplyUnary(x, &GraphBuilder::Log); }
Tensor Tanh(const Tensor& x) { return ApplyUnary(x, &GraphBuilder::Tanh); }
Tensor Relu(const Tensor& x) { return ApplyUnary(x, &GraphBuilder::Relu); }

Tensor Compare(const Tensor& a, const Tensor& b, CompareDirection direction) {
  return ApplyBinary("compare", a, b,
                     [direction](GraphBuilder& g, Value x, Value y) {
                       return g.Compare(x, y, direction);
                     });
}

Tensor Where(const Tensor& pred, const Tensor& on_true,
             const Tensor& on_false) {
  LazyContext* ctx = ContextOf({&pred, &on_true, &on_false});
  if (ctx == nullptr) return Tensor();
  absl::StatusOr<Value> p = ctx->Lower(pred);
  absl::StatusOr<Value> t = ctx->Lower(on_true);
  absl::StatusOr<Value> f = ctx->Lower(on_false);
  for (const auto* v : {&p, &t, &f}) {
    if (!v->ok()) return ctx->ErrorTensor(v->status());
  }
  return ctx->Wrap(ctx->builder().Select(*p, *t, *f));
}

Tensor Cast(const Tensor& x, ElementType type) {
  return ApplyUnary(
      x, [type](GraphBuilder& g, Value v) { return g.Convert(v, type); });
}

Tensor Reshape(const Tensor& x, std::vector<int64_t> dims) {
  return ApplyUnary(
      x, [&dims](GraphBuilder& g, Value v) { return g.Reshape(v, dims); });
}

Tensor Flatten(const Tensor& x, int64_t start_dim) {
  std::vector<int64_t> dims;
  const Shape& shape = x.shape();
  for (int64_t i = 0; i < start_dim && i < shape.rank(); ++i) {
    dims.push_back(shape.dim(i));
  }
  dims.push_back(-1);
  return Reshape(x, std::move(dims));
}

Tensor Transpose(const Tensor& x, std::vector<int64_t> permutation) {
  return ApplyUnary(x, [&permutation](GraphBuilder& g, Value v) {
    return g.Transpose(v, permutation);
  });
}

Tensor Slice(const Tensor& x, std::vector<int64_t> starts,
             std::vector<int64_t> limits) {
  return ApplyUnary(
      x, [&](GraphBuilder& g, Value v) { return g.Slice(v, starts, limits); });
}

Tensor Concat(absl::Span<const Tensor> xs, int64_t axis) {
  if (xs.empty() || xs[0].context() == nullptr) return Tensor();
  LazyContext* ctx = xs[0].context();
  std::vector<Value> values;
  for (const Tensor& x : xs) {
    absl::StatusOr<Value> v = ctx->Lower(x);
    if (!v.ok()) return ctx->ErrorTensor(v.status());
    values.push_back(*v);
  }
  return ctx->Wrap(ctx->builder().Concat(values, axis));
}

Tensor BroadcastTo(const Tensor& x, std::vector<int64_t> dims) {
  return ApplyUnary(
      x, [&dims](GraphBuilder& g, Value v) { return g.BroadcastTo(v, dims); });
}

Tensor Sum(const Tensor& x, std::vector<int64_t> axes, bool keep_dims) {
  return ApplyUnary(x, [&](GraphBuilder& g, Value v) {
    return g.ReduceSum(v, axes, keep_dims);
  });
}

Tensor Mean(const Tensor& x, std::vector<int64_t> axes, bool keep_dims) {
  return ApplyUnary(x, [&](GraphBuilder& g, Value v) {
    return g.ReduceMean(v, axes, keep_dims);
  });
}

Tensor ReduceMax(const Tensor& x, std::vector<int64_t> axes, bool keep_dims) {
  return ApplyUnary(x, [&](GraphBuilder& g, Value v) {
    return g.ReduceMax(v, axes, keep_dims);
  });
}

Tensor ArgMax(const Tensor& x, int64_t axis, bool keep_dims) {
  return ApplyUnary(x, [&](GraphBuilder& g, Value v) {
    return g.ArgMax(v, axis, keep_dims);
  });
}

Tensor Matmul(const Tensor& a, const Tensor& b) {
  LazyContext* ctx = ContextOf({&a, &b});
  if (ctx == nullptr) return Tensor();
  absl::StatusOr<Value> va = ctx->Lower(a);
  if (!va.ok()) return ctx->ErrorTensor(va.status());
  absl::StatusOr<Value> vb = ctx->Lower(b);
  if (!vb.ok()) return ctx->ErrorTensor(vb.status());
  return ctx->Wrap(ctx->builder().Dot(*va, *vb));
}

Tensor Conv2D(const Tensor& input, const Tensor& weights, Hw stride,
              Hw padding) {
  LazyContext* ctx = ContextOf({&input, &weights});
  if (ctx == nullptr) return Tensor();
  absl::StatusOr<Value> x = ctx->Lower(input);
  if (!x.ok()) return ctx->ErrorTensor(x.status());
  absl::StatusOr<Value> w = ctx->Lower(weights);
  if (!w.ok()) return ctx->ErrorTensor(w.status());
  return ctx->Wrap(ctx->builder().Conv2D(*x, *w, stride, padding));
}

Tensor MaxPool2D(const Tensor& input, Hw window, Hw stride, Hw padding) {
  return ApplyUnary(input, [&](GraphBuilder& g, Value v) {
    return g.MaxPool2D(v, window, stride, padding);
  });
}

Tensor Softmax(const Tensor& x, int64_t axis) {
  return ApplyUnary(
      x, [axis](GraphBuilder& g, Value v) { return g.Softmax(v, axis); });
}

Tensor LogSoftmax(const Tensor& x, int64_t axis) {
  return ApplyUnary(
      x, [axis](GraphBuilder& g, Value v) { return g.LogSoftmax(v, axis); });
}

namespace {
Tensor Loss(const Tensor& scores, const Tensor& labels, bool cross_entropy) {
  LazyContext* ctx = ContextOf({&scores, &labels});
  if (ctx == nullptr) return Tensor();
  absl::StatusOr<Value> s = ctx->Lower(scores);
  if (!s.ok()) return ctx->ErrorTensor(s.status());
  absl::StatusOr<Value> l = ctx->Lower(labels);
  if (!l.ok()) return ctx->ErrorTensor(l.status());
  GraphBuilder& g = ctx->builder();
  return ctx->Wrap(cross_entropy ? g.CrossEntropyLoss(*s, *l)
                                 : g.NllLoss(*s, *l));
}
}  // namespace

Tensor NllLoss(const Tensor& log_probs, const Tensor& labels) {
  return Loss(log_probs, labels, false);
}

Tensor CrossEntropyLoss(const Tensor& logits, const Tensor& labels) {
  return Loss(logits, labels, true);
}

absl::StatusOr<std::vector<Tensor>> Grad(const Tensor& loss,
                                         absl::Span<const Tensor> wrt) {
  LazyContext* ctx = loss.context();
  if (ctx == nullptr) {
    return absl::InvalidArgumentError("Grad: undefined loss tensor");
  }
  absl::StatusOr<Value> loss_value = ctx->Lower(loss);
  if (!loss_value.ok()) return loss_value.status();
  std::vector<Value> values;
  for (const Tensor& x : wrt) {
    absl::StatusOr<Value> v = ctx->Lower(x);
    if (!v.ok()) return v.status();
    values.push_back(*v);
  }
  absl::StatusOr<std::vector<Value>> grads =
      Grad(ctx->builder(), *loss_value, values);
  if (!grads.ok()) {
    ctx->builder().TakeStatus().IgnoreError();  // the step goes on
    return grads.status();
  }
  std::vector<Tensor> result;
  for (Value g : *grads) result.push_back(ctx->Wrap(g));
  return result;
}

}  // namespace podscope::runtime
