// Tensor ops: each lowers its operands into the pending step graph and
// records one builder op (plus NumPy-style broadcasts for binary ops).

#include <functional>

#include "absl/strings/str_cat.h"
#include "lazy/lazy_internal.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/collectives.h"
#include "podscope/runtime/ir/autodiff.h"
#include "podscope/runtime/lazy/lazy.h"

namespace podscope::runtime {
namespace {

// The context of the first defined operand.
LazyContext* ContextOf(absl::Span<const Tensor* const> tensors) {
  for (const Tensor* t : tensors) {
    if (t->context() != nullptr) return t->context();
  }
  return nullptr;
}

// The values of `tensors` in ctx's pending graph, or the first operand's
// error.
absl::StatusOr<std::vector<Value>> LowerAll(
    LazyContext& ctx, absl::Span<const Tensor* const> tensors) {
  std::vector<Value> values;
  values.reserve(tensors.size());
  for (const Tensor* t : tensors) {
    PODSCOPE_ASSIGN_OR_RETURN(Value v, ctx.Lower(*t));
    values.push_back(v);
  }
  return values;
}

// Records one op over `operands` into their context's pending step: lowers
// them, or returns the tensor carrying the first operand's error (an
// undefined tensor when no operand has a context); then `record` builds the
// result, whose error (from the builder or its own) the result carries.
using Recorder = std::function<absl::StatusOr<Value>(GraphBuilder&,
                                                     absl::Span<const Value>)>;

Tensor RecordOp(absl::Span<const Tensor* const> operands,
                const Recorder& record) {
  LazyContext* ctx = ContextOf(operands);
  if (ctx == nullptr) return Tensor();
  absl::StatusOr<std::vector<Value>> values = LowerAll(*ctx, operands);
  if (!values.ok()) return ctx->ErrorTensor(values.status());
  absl::StatusOr<Value> result = record(ctx->builder(), *values);
  if (!result.ok()) return ctx->ErrorTensor(result.status());
  return ctx->Wrap(*result);
}

Tensor RecordOp(std::initializer_list<const Tensor*> operands,
                const Recorder& record) {
  return RecordOp(absl::MakeConstSpan(operands.begin(), operands.size()),
                  record);
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
  return RecordOp({&x}, [&](GraphBuilder& g, absl::Span<const Value> v) {
    return op(g, v[0]);
  });
}

Tensor ApplyBinary(absl::string_view name, const Tensor& a, const Tensor& b,
                   const Binary& op) {
  return RecordOp(
      {&a, &b},
      [&](GraphBuilder& g, absl::Span<const Value> v) -> absl::StatusOr<Value> {
        PODSCOPE_ASSIGN_OR_RETURN(
            auto dims, BroadcastDims(name, g.shape(v[0]), g.shape(v[1])));
        return op(g, g.BroadcastTo(v[0], dims), g.BroadcastTo(v[1], dims));
      });
}

Tensor ApplyScalar(const Tensor& a, float b, const Binary& op) {
  return RecordOp({&a}, [&](GraphBuilder& g, absl::Span<const Value> v) {
    return op(g, v[0], g.Full(g.shape(v[0]), b));
  });
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
  return ApplyScalar(a, b, &GraphBuilder::Add);
}
Tensor operator-(const Tensor& a, float b) {
  return ApplyScalar(a, b, &GraphBuilder::Sub);
}
Tensor operator*(const Tensor& a, float b) {
  return ApplyScalar(a, b, &GraphBuilder::Mul);
}
Tensor operator/(const Tensor& a, float b) {
  return ApplyScalar(a, b, &GraphBuilder::Div);
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
  return RecordOp({&pred, &on_true, &on_false},
                  [](GraphBuilder& g, absl::Span<const Value> v) {
                    return g.Select(v[0], v[1], v[2]);
                  });
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
  std::vector<const Tensor*> operands;
  for (const Tensor& x : xs) operands.push_back(&x);
  return RecordOp(operands, [axis](GraphBuilder& g, absl::Span<const Value> v) {
    return g.Concat(v, axis);
  });
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
  return RecordOp({&a, &b}, [](GraphBuilder& g, absl::Span<const Value> v) {
    return g.Dot(v[0], v[1]);
  });
}

Tensor Conv2D(const Tensor& input, const Tensor& weights, Hw stride,
              Hw padding) {
  return RecordOp({&input, &weights},
                  [&](GraphBuilder& g, absl::Span<const Value> v) {
                    return g.Conv2D(v[0], v[1], stride, padding);
                  });
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

Tensor NllLoss(const Tensor& log_probs, const Tensor& labels) {
  return RecordOp({&log_probs, &labels},
                  [](GraphBuilder& g, absl::Span<const Value> v) {
                    return g.NllLoss(v[0], v[1]);
                  });
}

Tensor CrossEntropyLoss(const Tensor& logits, const Tensor& labels) {
  return RecordOp({&logits, &labels},
                  [](GraphBuilder& g, absl::Span<const Value> v) {
                    return g.CrossEntropyLoss(v[0], v[1]);
                  });
}

Tensor Dropout(const Tensor& x, float rate) {
  if (rate == 0.0f) return x;
  LazyContext* ctx = x.context();
  if (ctx == nullptr) return Tensor();
  const Tensor seed = ctx->StepSeed();
  // The builder numbers the step's dropouts, so each draws its own mask.
  return RecordOp({&x, &seed},
                  [rate](GraphBuilder& g, absl::Span<const Value> v) {
                    return g.Dropout(v[0], v[1], rate);
                  });
}

Tensor AllReduce(const Tensor& x, const Communicator& comm, ReduceOp op) {
  const int64_t id = comm.id();
  return RecordOp({&x}, [id, op](GraphBuilder& g, absl::Span<const Value> v) {
    return g.AllReduce(v[0], id, op);
  });
}

absl::StatusOr<std::vector<Tensor>> Grad(const Tensor& loss,
                                         absl::Span<const Tensor> wrt) {
  LazyContext* ctx = loss.context();
  if (ctx == nullptr) {
    return absl::InvalidArgumentError("Grad: undefined loss tensor");
  }
  std::vector<const Tensor*> operands = {&loss};
  for (const Tensor& x : wrt) operands.push_back(&x);
  PODSCOPE_ASSIGN_OR_RETURN(std::vector<Value> values,
                            LowerAll(*ctx, operands));
  absl::StatusOr<std::vector<Value>> grads = Grad(
      ctx->builder(), values.front(), absl::MakeConstSpan(values).subspan(1));
  if (!grads.ok()) {
    ctx->builder().TakeStatus().IgnoreError();  // the step goes on
    return grads.status();
  }
  std::vector<Tensor> result;
  for (Value g : *grads) result.push_back(ctx->Wrap(g));
  return result;
}

}  // namespace podscope::runtime
