// Host arrays: what goes into and comes out of a device. A Literal owns its
// zero-initialised bytes and knows its Shape; building one from values that
// do not fill the shape is an error naming both, and typed views must match
// the element type (checked in debug builds).
#ifndef PODSCOPE_RUNTIME_IR_LITERAL_H_
#define PODSCOPE_RUNTIME_IR_LITERAL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/shape.h"

namespace podscope::runtime {

// An array in host memory: what goes into and comes out of a device.
class Literal {
 public:
  // A zero-filled f32 scalar.
  Literal() : Literal(Shape()) {}
  // A zero-filled array of `shape`.
  explicit Literal(Shape shape);

  template <typename T>
  static absl::StatusOr<Literal> FromVector(std::vector<int64_t> dims,
                                            absl::Span<const T> values) {
    Literal literal(Shape(ElementTypeOf<T>::value, std::move(dims)));
    if (static_cast<int64_t>(values.size()) != literal.shape().num_elements()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Literal: ", values.size(), " values do not fill shape ",
                       literal.shape().ToString()));
    }
    if (!values.empty()) {
      std::memcpy(literal.untyped_data(), values.data(),
                  values.size() * sizeof(T));
    }
    return literal;
  }
  template <typename T>
  static absl::StatusOr<Literal> FromVector(std::vector<int64_t> dims,
                                            const std::vector<T>& values) {
    return FromVector<T>(std::move(dims), absl::Span<const T>(values));
  }
  static Literal ScalarF32(float value);
  static Literal ScalarI32(int32_t value);

  const Shape& shape() const { return shape_; }
  int64_t size_bytes() const { return shape_.byte_size(); }
  void* untyped_data() { return words_.data(); }
  const void* untyped_data() const { return words_.data(); }

  // Typed views; T must match the element type (checked in debug builds).
  template <typename T>
  absl::Span<const T> data() const {
    return absl::Span<const T>(reinterpret_cast<const T*>(words_.data()),
                               shape_.num_elements());
  }
  template <typename T>
  absl::Span<T> mutable_data() {
    return absl::Span<T>(reinterpret_cast<T*>(words_.data()),
                         shape_.num_elements());
  }
  template <typename T>
  std::vector<T> ToVector() const {
    auto view = data<T>();
    return std::vector<T>(view.begin(), view.end());
  }

  // Shape and up to the first 16 values, for test failure messages.
  std::string ToString() const;

 private:
  Shape shape_;
  // uint32_t storage keeps every element type naturally aligned.
  std::vector<uint32_t> words_;
};

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_IR_LITERAL_H_
