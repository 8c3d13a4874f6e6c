#include "podscope/runtime/ir/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace podscope::runtime {

absl::string_view ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kF32:
      return "f32";
    case ElementType::kI32:
      return "i32";
    case ElementType::kPred:
      return "pred";
  }
  return "?";
}

int64_t ElementSize(ElementType type) {
  return type == ElementType::kPred ? 1 : 4;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::ToString() const {
  return absl::StrCat(ElementTypeName(type_), "[", absl::StrJoin(dims_, ","),
                      "]");
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

}  // namespace podscope::runtime
