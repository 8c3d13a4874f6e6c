// Writing JSON text: string escaping and a streaming writer.
//
// Contract:
// - AppendJsonString always yields a valid JSON string literal: quotes,
//   backslashes and control characters are escaped, well-formed UTF-8
//   passes through, and each byte that is not part of a well-formed UTF-8
//   sequence (a name cut at a byte limit) becomes U+FFFD, which strict
//   parsers require.
// - Numbers: integers exactly, doubles as the shortest text that reads back
//   as the same double; NaN and infinities have no JSON form and are
//   written as null.
// - JsonWriter tracks commas and nesting; the caller keeps the calls
//   balanced (Key only directly inside an object, before each of its
//   values; End* matching Begin*). Misuse is a programming error, checked
//   by assertions in debug builds.
// - Layout: kPretty puts each element on its own line, indented two spaces
//   a level, and ends the document with a newline; kOneLine writes a
//   container on one line with ", " and ": "; kCompact writes no
//   whitespace at all. A container can ask for a more compact layout than
//   its parent (a pretty document of one-line records); never a less
//   compact one.
#ifndef PODSCOPE_BASE_JSON_H_
#define PODSCOPE_BASE_JSON_H_

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podscope::base {

// Appends `s` as a JSON string literal, quotes included.
void AppendJsonString(std::string_view s, std::string* out);

// Appends `v` as a JSON number (null when not finite).
void AppendJsonDouble(double v, std::string* out);

enum class JsonLayout { kPretty, kOneLine, kCompact };

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out, JsonLayout layout = JsonLayout::kPretty)
      : out_(out), layout_(layout) {}

  // Containers take the writer's layout, or `layout` if more compact.
  JsonWriter& BeginObject() { return Open('{', layout_); }
  JsonWriter& BeginObject(JsonLayout layout) { return Open('{', layout); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('[', layout_); }
  JsonWriter& BeginArray(JsonLayout layout) { return Open('[', layout); }
  JsonWriter& EndArray() { return Close(']'); }

  // The key of the next value; only inside an object.
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  // Key and value in one call.
  JsonWriter& Field(std::string_view key, std::string_view value) {
    return Key(key).String(value);
  }
  JsonWriter& Field(std::string_view key, const char* value) {
    return Key(key).String(value);
  }
  JsonWriter& Field(std::string_view key, bool value) {
    return Key(key).Bool(value);
  }
  JsonWriter& Field(std::string_view key, double value) {
    return Key(key).Double(value);
  }
  template <typename T>
  requires(std::integral<T> &&
           !std::same_as<T, bool>) JsonWriter& Field(std::string_view key,
                                                     T value) {
    if constexpr (std::signed_integral<T>) {
      return Key(key).Int(value);
    } else {
      return Key(key).Uint(value);
    }
  }

  // True once one whole top-level value has been written.
  bool complete() const { return done_; }

 private:
  struct Level {
    JsonLayout layout;
    bool empty;
  };
  void BeforeValue();
  void AfterValue();
  JsonWriter& Open(char bracket, JsonLayout layout);
  JsonWriter& Close(char bracket);
  void Separate(JsonLayout layout);

  std::string* out_;
  JsonLayout layout_;
  std::vector<Level> open_;
  bool after_key_ = false;
  bool done_ = false;
};

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_JSON_H_
