#include "podscope/base/strings.h"

#include <cstddef>

namespace podscope::base {
namespace {

char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

}  // namespace

bool ContainsIgnoreCase(std::string_view text, std::string_view needle) {
  if (needle.size() > text.size()) return false;
  for (size_t i = 0; i + needle.size() <= text.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() &&
           AsciiLower(text[i + k]) == AsciiLower(needle[k])) {
      ++k;
    }
    if (k == needle.size()) return true;
  }
  return false;
}

}  // namespace podscope::base
