#include "json_writer.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "podscope/trace_format/chrome_export.h"

namespace podscope::tools {

void JsonWriter::NewLine() {
  out_->push_back('\n');
  out_->append(2 * empty_.size(), ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (empty_.empty()) return;  // the document's top-level value
  if (!empty_.back()) out_->push_back(',');
  empty_.back() = false;
  NewLine();
}

void JsonWriter::Open(char bracket) {
  BeforeValue();
  out_->push_back(bracket);
  empty_.push_back(true);
}

void JsonWriter::Close(char bracket) {
  const bool was_empty = empty_.back();
  empty_.pop_back();
  if (!was_empty) NewLine();
  out_->push_back(bracket);
  if (empty_.empty()) out_->push_back('\n');
}

JsonWriter& JsonWriter::BeginObject() {
  Open('{');
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  Close('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  Open('[');
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  Close(']');
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  trace_format::AppendJsonString(key, out_);
  out_->append(": ");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  trace_format::AppendJsonString(value, out_);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(out_, value);
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  absl::StrAppend(out_, value);
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_->append("null");
    return *this;
  }
  // The shortest text that reads back as the same double.
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out_->append(buffer, end);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_->append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_->append("null");
  return *this;
}

}  // namespace podscope::tools
