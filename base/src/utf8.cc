#include "podscope/base/utf8.h"

namespace podscope::base {

// The length of the well-formed UTF-8 sequence (RFC 3629) that starts at
// s[i] with a byte >= 0x80, or 0 if there is none.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
  };
  const unsigned lead = byte(0);
  size_t length;
  unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) lo = 0xA0;  // overlong
    if (lead == 0xED) hi = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) lo = 0x90;  // overlong
    if (lead == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return length;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) < 0x80) continue;
    const size_t length = Utf8SequenceLength(s, i);
    if (length == 0) return false;
    i += length - 1;
  }
  return true;
}

std::string ToValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      out.push_back(s[i]);
      continue;
    }
    const size_t length = Utf8SequenceLength(s, i);
    if (length == 0) {
      out.append("\xEF\xBF\xBD");
    } else {
      out.append(s.substr(i, length));
      i += length - 1;
    }
  }
  return out;
}

}  // namespace podscope::base
