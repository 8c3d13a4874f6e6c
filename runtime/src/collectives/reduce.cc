#include "collectives/reduce.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace podscope::runtime::internal {
namespace {

struct Sum {
  template <typename T>
  static T Apply(T a, T b) {
    return a + b;
  }
};
struct Max {
  template <typename T>
  static T Apply(T a, T b) {
    return std::max(a, b);
  }
};
struct Min {
  template <typename T>
  static T Apply(T a, T b) {
    return std::min(a, b);
  }
};
struct Or {
  static uint8_t Apply(uint8_t a, uint8_t b) { return (a | b) != 0; }
};
struct And {
  static uint8_t Apply(uint8_t a, uint8_t b) { return (a != 0) && (b != 0); }
};

template <typename T, typename Op>
void Reduce(void* out, const void* a, const void* b, size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = Op::Apply(x[i], y[i]);
}

// i32 sums wrap like two's complement instead of overflowing.
void SumI32(void* out, const void* a, const void* b, size_t n) {
  int32_t* o = static_cast<int32_t*>(out);
  const int32_t* x = static_cast<const int32_t*>(a);
  const int32_t* y = static_cast<const int32_t*>(b);
  for (size_t i = 0; i < n; ++i) {
    o[i] = static_cast<int32_t>(static_cast<uint32_t>(x[i]) +
                                static_cast<uint32_t>(y[i]));
  }
}

}  // namespace

absl::StatusOr<ReduceFn> ReduceFunction(ElementType type, ReduceOp op) {
  switch (type) {
    case ElementType::kF32:
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean:
          return &Reduce<float, Sum>;
        case ReduceOp::kMax:
          return &Reduce<float, Max>;
        case ReduceOp::kMin:
          return &Reduce<float, Min>;
      }
      break;
    case ElementType::kI32:
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean:
          return &SumI32;
        case ReduceOp::kMax:
          return &Reduce<int32_t, Max>;
        case ReduceOp::kMin:
          return &Reduce<int32_t, Min>;
      }
      break;
    case ElementType::kPred:
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMax:
          return &Reduce<uint8_t, Or>;
        case ReduceOp::kMin:
          return &Reduce<uint8_t, And>;
        case ReduceOp::kMean:
          return absl::InvalidArgumentError(
              "collectives: mean is not defined on pred");
      }
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("collectives: no reduction ",
                                                 ReduceOpName(op), " on ",
                                                 ElementTypeName(type)));
}

void DivideInPlace(ElementType type, void* data, int64_t count, int divisor) {
  if (divisor == 1) return;
  if (type == ElementType::kF32) {
    float* v = static_cast<float*>(data);
    const float d = static_cast<float>(divisor);
    for (int64_t i = 0; i < count; ++i) v[i] /= d;
  } else if (type == ElementType::kI32) {
    int32_t* v = static_cast<int32_t*>(data);
    for (int64_t i = 0; i < count; ++i) v[i] /= divisor;
  }
}

}  // namespace podscope::runtime::internal
