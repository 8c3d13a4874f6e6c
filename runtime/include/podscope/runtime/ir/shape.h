// Element types and dense row-major shapes with static dimensions, as every
// buffer and IR value has them; ToString() is how errors name a shape.
#ifndef PODSCOPE_RUNTIME_IR_SHAPE_H_
#define PODSCOPE_RUNTIME_IR_SHAPE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace podscope::runtime {

// Element types a buffer or IR value can hold. kPred is the result of a
// comparison and is stored as one byte per element (0 or 1).
enum class ElementType : uint8_t { kF32, kI32, kPred };

absl::string_view ElementTypeName(ElementType type);
int64_t ElementSize(ElementType type);

template <typename T>
struct ElementTypeOf;
template <>
struct ElementTypeOf<float> {
  static constexpr ElementType value = ElementType::kF32;
};
template <>
struct ElementTypeOf<int32_t> {
  static constexpr ElementType value = ElementType::kI32;
};
template <>
struct ElementTypeOf<uint8_t> {
  static constexpr ElementType value = ElementType::kPred;
};

// A dense, row-major array shape with static dimensions.
class Shape {
 public:
  Shape() = default;
  Shape(ElementType type, std::vector<int64_t> dims)
      : type_(type), dims_(std::move(dims)) {}

  ElementType element_type() const { return type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  int64_t num_elements() const;
  int64_t byte_size() const { return num_elements() * ElementSize(type_); }

  // "f32[2,3]"; a scalar prints as "f32[]".
  std::string ToString() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.type_ == b.type_ && a.dims_ == b.dims_;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  ElementType type_ = ElementType::kF32;
  std::vector<int64_t> dims_;
};

inline Shape F32Shape(std::vector<int64_t> dims) {
  return Shape(ElementType::kF32, std::move(dims));
}
inline Shape I32Shape(std::vector<int64_t> dims) {
  return Shape(ElementType::kI32, std::move(dims));
}
inline Shape PredShape(std::vector<int64_t> dims) {
  return Shape(ElementType::kPred, std::move(dims));
}

// Row-major strides, in elements, for `dims`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_IR_SHAPE_H_
