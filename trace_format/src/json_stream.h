// Reads a JSON trace document (plain or gzip) in blocks and hands out the
// elements of its event array one span at a time, so that a file of any
// size is parsed in bounded memory: only the element being parsed (and one
// read block) is held. Accepts both layouts of the Trace Event Format: an
// object whose "traceEvents" member is the array (other members are handed
// out as (key, value) spans), and a bare array (whose closing ']' may be
// missing, as the format allows).
//
// Every span points into a buffer followed by at least
// simdjson::SIMDJSON_PADDING readable bytes, and stays valid until the next
// call. Errors name the file and the byte offset (in the uncompressed
// text).
#ifndef PODSCOPE_TRACE_FORMAT_SRC_JSON_STREAM_H_
#define PODSCOPE_TRACE_FORMAT_SRC_JSON_STREAM_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace podscope::trace_format::json_internal {

struct JsonItem {
  enum Kind {
    kEvent,   // an element of the event array
    kMember,  // a top-level member other than "traceEvents"
    kEnd,     // the document ended
  } kind = kEnd;
  std::string_view key;    // kMember: the raw key (between the quotes)
  std::string_view value;  // the element or the member's value, as written
  uint64_t offset = 0;     // of `value` in the uncompressed text
  // Bytes past the span that may be read (the padding simdjson needs).
  size_t capacity = 0;
};

class JsonEventStream {
 public:
  // Opens `path` (gzip is recognised by its content).
  static absl::StatusOr<std::unique_ptr<JsonEventStream>> Open(
      const std::string& path);
  // Reads from memory (tests, fuzzing); `name` is used in messages.
  static std::unique_ptr<JsonEventStream> FromBuffer(std::string_view data,
                                                     std::string name);
  ~JsonEventStream();
  JsonEventStream(const JsonEventStream&) = delete;
  JsonEventStream& operator=(const JsonEventStream&) = delete;

  // The next item; kEnd at the end of the document.
  absl::StatusOr<JsonItem> Next();

  const std::string& name() const { return name_; }
  // Bytes consumed from the source (compressed bytes for gzip), for
  // progress reports.
  uint64_t source_offset() const;
  // An error about the text at uncompressed offset `offset`.
  absl::Status Error(uint64_t offset, std::string_view what) const;

 private:
  JsonEventStream() = default;
  // Makes at least `n` bytes from pos_ available unless the input ends;
  // false at the end of the input.
  absl::StatusOr<bool> Ensure(size_t n);
  // Skips whitespace; false at the end of the input.
  absl::StatusOr<bool> SkipSpace();
  // The length of the JSON value starting at pos_ (reading more as
  // needed); an error for malformed or truncated text.
  absl::StatusOr<size_t> ValueLength();
  absl::StatusOr<JsonItem> NextInArray();
  absl::StatusOr<JsonItem> NextMember();
  JsonItem Item(JsonItem::Kind kind, size_t length);

  std::string name_;
  void* gz_ = nullptr;       // gzFile
  std::string_view memory_;  // FromBuffer's data
  size_t memory_pos_ = 0;
  bool input_done_ = false;

  std::string buf_;  // [0, end_) holds text; padding beyond
  size_t pos_ = 0;   // the next unread byte in buf_
  size_t end_ = 0;
  uint64_t base_ = 0;  // the offset of buf_[0] in the text

  enum class State {
    kStart,
    kObjectMember,  // expecting a member (or '}') of the top object
    kObjectComma,   // after a member: ',' or '}'
    kArrayFirst,    // after '[': an element or ']'
    kArrayNext,     // after an element: ',' or ']'
    kDone,
  } state_ = State::kStart;
  bool in_object_ = false;  // the array is the object's "traceEvents"
  std::string member_key_;  // the key of the last kMember item
};

}  // namespace podscope::trace_format::json_internal

#endif  // PODSCOPE_TRACE_FORMAT_SRC_JSON_STREAM_H_
