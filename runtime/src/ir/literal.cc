#include "podscope/runtime/ir/literal.h"

#include "absl/strings/str_cat.h"

namespace podscope::runtime {

Literal::Literal(Shape shape)
    : shape_(std::move(shape)), words_((shape_.byte_size() + 3) / 4, 0u) {}

Literal Literal::ScalarF32(float value) {
  Literal literal(F32Shape({}));
  literal.mutable_data<float>()[0] = value;
  return literal;
}

Literal Literal::ScalarI32(int32_t value) {
  Literal literal(I32Shape({}));
  literal.mutable_data<int32_t>()[0] = value;
  return literal;
}

std::string Literal::ToString() const {
  std::string out = absl::StrCat(shape_.ToString(), " {");
  const int64_t n = shape_.num_elements();
  const int64_t shown = n < 16 ? n : 16;
  for (int64_t i = 0; i < shown; ++i) {
    if (i > 0) out += ", ";
    switch (shape_.element_type()) {
      case ElementType::kF32:
        absl::StrAppend(&out, data<float>()[i]);
        break;
      case ElementType::kI32:
        absl::StrAppend(&out, data<int32_t>()[i]);
        break;
      case ElementType::kPred:
        absl::StrAppend(&out, static_cast<int>(data<uint8_t>()[i]));
        break;
    }
  }
  if (shown < n) out += ", ...";
  return out + "}";
}

}  // namespace podscope::runtime
