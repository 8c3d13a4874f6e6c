// Small string searches shared by the tools and the viewer.
//
// Contract: ContainsIgnoreCase(text, needle) is true when `needle` occurs
// in `text` with ASCII letters compared without regard to case (other
// bytes, UTF-8 included, compare exactly); an empty needle occurs in
// every text.
#ifndef PODSCOPE_BASE_STRINGS_H_
#define PODSCOPE_BASE_STRINGS_H_

#include <string_view>

namespace podscope::base {

bool ContainsIgnoreCase(std::string_view text, std::string_view needle);

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_STRINGS_H_
