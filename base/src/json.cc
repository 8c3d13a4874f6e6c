#include "podscope/base/json.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "podscope/base/utf8.h"

namespace podscope::base {

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(s, i);
      if (length == 0) {
        out->append("\xEF\xBF\xBD");
      } else {
        out->append(s.substr(i, length));
        i += length - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out->append(buf);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

void AppendJsonDouble(double v, std::string* out) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), v);
  out->append(buffer, result.ptr);
}

void JsonWriter::Separate(JsonLayout layout) {
  switch (layout) {
    case JsonLayout::kPretty:
      out_->push_back('\n');
      out_->append(2 * open_.size(), ' ');
      break;
    case JsonLayout::kOneLine:
      out_->push_back(' ');
      break;
    case JsonLayout::kCompact:
      break;
  }
}

void JsonWriter::BeforeValue() {
  assert(!done_ && "JsonWriter: a second top-level value");
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (open_.empty()) return;  // the document's top-level value
  Level& level = open_.back();
  if (!level.empty) out_->push_back(',');
  if (level.layout == JsonLayout::kPretty || !level.empty) {
    Separate(level.layout);
  }
  level.empty = false;
}

void JsonWriter::AfterValue() {
  if (open_.empty()) done_ = true;
}

JsonWriter& JsonWriter::Open(char bracket, JsonLayout layout) {
  BeforeValue();
  const JsonLayout parent = open_.empty() ? layout_ : open_.back().layout;
  out_->push_back(bracket);
  open_.push_back({std::max(layout, parent), true});
  return *this;
}

JsonWriter& JsonWriter::Close(char bracket) {
  assert(!open_.empty() && !after_key_);
  const Level level = open_.back();
  open_.pop_back();
  if (!level.empty && level.layout == JsonLayout::kPretty) {
    Separate(JsonLayout::kPretty);
  }
  out_->push_back(bracket);
  if (open_.empty() && layout_ == JsonLayout::kPretty) out_->push_back('\n');
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  assert(!open_.empty() && !after_key_);
  BeforeValue();
  AppendJsonString(key, out_);
  out_->append(open_.back().layout == JsonLayout::kCompact ? ":" : ": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendJsonString(value, out_);
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_->append(buffer, result.ptr);
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_->append(buffer, result.ptr);
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  AppendJsonDouble(value, out_);
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_->append(value ? "true" : "false");
  AfterValue();
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_->append("null");
  AfterValue();
  return *this;
}

}  // namespace podscope::base
