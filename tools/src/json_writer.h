// Writes a JSON document into a string, indented for people to read and
// strict enough for any parser: commas and nesting are tracked here, string
// escaping is trace_format::AppendJsonString's.
#ifndef PODSCOPE_TOOLS_JSON_WRITER_H_
#define PODSCOPE_TOOLS_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podscope::tools {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // The key of the next value; only inside an object.
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  // Non-finite values have no JSON form and are written as null.
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  // Key and value in one call, for the common case.
  JsonWriter& Field(std::string_view key, std::string_view value) {
    return Key(key).String(value);
  }
  JsonWriter& Field(std::string_view key, const char* value) {
    return Key(key).String(value);
  }
  JsonWriter& Field(std::string_view key, int64_t value) {
    return Key(key).Int(value);
  }
  JsonWriter& Field(std::string_view key, int32_t value) {
    return Key(key).Int(value);
  }
  JsonWriter& Field(std::string_view key, uint32_t value) {
    return Key(key).Uint(value);
  }
  JsonWriter& Field(std::string_view key, uint64_t value) {
    return Key(key).Uint(value);
  }
  JsonWriter& Field(std::string_view key, bool value) {
    return Key(key).Bool(value);
  }

 private:
  void BeforeValue();
  void Open(char bracket);
  void Close(char bracket);
  void NewLine();

  std::string* out_;
  // One entry per open container: whether it has no element yet.
  std::vector<bool> empty_;
  bool after_key_ = false;
};

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_JSON_WRITER_H_
