// UTF-8 well-formedness (RFC 3629: no overlong forms, no surrogates,
// nothing beyond U+10FFFF) and repair. Text from users and the OS (thread
// names cut mid-character, Latin-1 argv, foreign files) is bytes; formats
// that require UTF-8 (protobuf `string` fields and map keys, JSON) get it
// repaired, each ill-formed byte becoming U+FFFD.
#ifndef PODSCOPE_BASE_UTF8_H_
#define PODSCOPE_BASE_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace podscope::base {

// The length (2 to 4) of the well-formed multi-byte sequence that starts at
// s[i], or 0 when s[i] does not start one (ASCII bytes included).
size_t Utf8SequenceLength(std::string_view s, size_t i);

bool IsValidUtf8(std::string_view s);

// s with each byte that is not part of a well-formed sequence replaced by
// U+FFFD (EF BF BD); s itself when it is valid.
std::string ToValidUtf8(std::string_view s);

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_UTF8_H_
