#include "json_stream.h"

#include <zlib.h>

#include "podscope/base/status_macros.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace podscope::trace_format::json_internal {
namespace {

constexpr size_t kBlock = 1 << 20;
// simdjson::SIMDJSON_PADDING, without pulling simdjson into this file.
constexpr size_t kPadding = 64;
// No single element or member may be larger (a missing bracket would
// otherwise read the whole file into memory).
constexpr size_t kMaxValue = size_t{512} << 20;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The state of the scan for the end of a value; it survives reading more
// text (positions are relative to the value's start).
struct ScanState {
  size_t i = 0;
  int depth = 0;
  bool in_string = false;
  bool escape = false;  // the previous byte was a backslash in a string
};

// Scans p[state.i, end) byte by byte; true when the value ended (at
// state.i).
bool ScanBytes(const char* p, size_t end, ScanState& st) {
  for (; st.i < end; ++st.i) {
    const char c = p[st.i];
    if (st.in_string) {
      if (st.escape) {
        st.escape = false;
      } else if (c == '\\') {
        st.escape = true;
      } else if (c == '"') {
        st.in_string = false;
        if (st.depth == 0) {
          ++st.i;
          return true;
        }
      }
    } else if (c == '"') {
      st.in_string = true;
    } else if (c == '{' || c == '[') {
      ++st.depth;
    } else if (c == '}' || c == ']') {
      if (--st.depth <= 0) {
        ++st.i;
        return true;
      }
    }
  }
  return false;
}

// Scans p[state.i, n): 16 bytes at a time where they hold no backslash,
// visiting only the quotes and brackets; true when the value ended.
bool Scan(const char* p, size_t n, ScanState& st) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i open_brace = _mm_set1_epi8('{');
  const __m128i close_brace = _mm_set1_epi8('}');
  const __m128i open_bracket = _mm_set1_epi8('[');
  const __m128i close_bracket = _mm_set1_epi8(']');
  while (st.i + 16 <= n) {
    const __m128i v =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + st.i));
    if (st.escape || _mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash)) != 0) {
      if (ScanBytes(p, st.i + 16, st)) return true;
      continue;
    }
    uint32_t quotes = _mm_movemask_epi8(_mm_cmpeq_epi8(v, quote));
    uint32_t brackets = _mm_movemask_epi8(
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, open_brace),
                                  _mm_cmpeq_epi8(v, close_brace)),
                     _mm_or_si128(_mm_cmpeq_epi8(v, open_bracket),
                                  _mm_cmpeq_epi8(v, close_bracket))));
    while (true) {
      const uint32_t hits = st.in_string ? quotes : (quotes | brackets);
      if (hits == 0) break;
      const int k = __builtin_ctz(hits);
      const uint32_t done = (2u << k) - 1;
      quotes &= ~done;
      brackets &= ~done;
      const char c = p[st.i + k];
      if (c == '"') {
        st.in_string = !st.in_string;
        if (!st.in_string && st.depth == 0) {
          st.i += k + 1;
          return true;
        }
      } else if (c == '{' || c == '[') {
        ++st.depth;
      } else if (--st.depth <= 0) {
        st.i += k + 1;
        return true;
      }
    }
    st.i += 16;
  }
#endif
  return ScanBytes(p, n, st);
}

}  // namespace

absl::StatusOr<std::unique_ptr<JsonEventStream>> JsonEventStream::Open(
    const std::string& path) {
  auto s = std::unique_ptr<JsonEventStream>(new JsonEventStream());
  s->name_ = path;
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  gzbuffer(gz, 256 << 10);
  s->gz_ = gz;
  return s;
}

std::unique_ptr<JsonEventStream> JsonEventStream::FromBuffer(
    std::string_view data, std::string name) {
  auto s = std::unique_ptr<JsonEventStream>(new JsonEventStream());
  s->name_ = std::move(name);
  s->memory_ = data;
  return s;
}

JsonEventStream::~JsonEventStream() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
}

uint64_t JsonEventStream::source_offset() const {
  if (gz_ == nullptr) return memory_pos_;
  const auto off = gzoffset(static_cast<gzFile>(gz_));
  return off < 0 ? 0 : static_cast<uint64_t>(off);
}

absl::Status JsonEventStream::Error(uint64_t offset,
                                    std::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat(name_, ": byte ", offset, ": ",
                   absl::string_view(what.data(), what.size())));
}

absl::StatusOr<bool> JsonEventStream::Ensure(size_t n) {
  while (end_ - pos_ < n) {
    if (input_done_) return false;
    // Keep [pos_, end_), dropping what was consumed.
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      base_ += pos_;
      end_ -= pos_;
      pos_ = 0;
    }
    if (end_ > kMaxValue) {
      return Error(base_,
                   "a JSON value larger than 512 MiB (a missing "
                   "bracket or quote?)");
    }
    const size_t want = std::max(kBlock, n - end_);
    if (buf_.size() < end_ + want + kPadding) {
      buf_.resize(std::max(end_ + want + kPadding, buf_.size() * 2));
    }
    size_t got = 0;
    if (gz_ != nullptr) {
      const int r = gzread(static_cast<gzFile>(gz_), buf_.data() + end_,
                           static_cast<unsigned>(want));
      if (r < 0) {
        int err = 0;
        const char* msg = gzerror(static_cast<gzFile>(gz_), &err);
        return Error(base_ + end_,
                     absl::StrCat("cannot read: ",
                                  err == Z_ERRNO ? std::strerror(errno) : msg));
      }
      got = static_cast<size_t>(r);
      if (got == 0) {
        // gzread returns 0 at the end, and also for a gzip stream cut
        // short; the latter is damage, not the end of the document.
        int err = 0;
        gzerror(static_cast<gzFile>(gz_), &err);
        if (err != Z_OK) {
          return Error(base_ + end_, "the gzip stream is damaged or cut short");
        }
      }
    } else {
      got = std::min(want, memory_.size() - memory_pos_);
      std::memcpy(buf_.data() + end_, memory_.data() + memory_pos_, got);
      memory_pos_ += got;
    }
    if (got == 0) input_done_ = true;
    end_ += got;
    std::memset(buf_.data() + end_, 0, kPadding);
  }
  return true;
}

absl::StatusOr<bool> JsonEventStream::SkipSpace() {
  while (true) {
    while (pos_ < end_ && IsSpace(buf_[pos_])) ++pos_;
    if (pos_ < end_) return true;
    PODSCOPE_ASSIGN_OR_RETURN(auto more, Ensure(1));
    if (!more) return false;
  }
}

absl::StatusOr<size_t> JsonEventStream::ValueLength() {
  // Positions are relative to pos_, which Ensure may move.
  ScanState st;
  const uint64_t start = base_ + pos_;
  const char first = buf_[pos_];
  const bool scalar = first != '{' && first != '[' && first != '"';
  while (true) {
    const char* p = buf_.data() + pos_;
    const size_t n = end_ - pos_;
    if (scalar) {
      while (st.i < n && !IsSpace(p[st.i]) && p[st.i] != ',' &&
             p[st.i] != ']' && p[st.i] != '}') {
        ++st.i;
      }
      if (st.i < n) return st.i;
    } else if (Scan(p, n, st)) {
      return st.i;
    }
    PODSCOPE_ASSIGN_OR_RETURN(auto more, Ensure(st.i + 1));
    if (!more) {
      if (scalar) return end_ - pos_;
      return Error(base_ + end_,
                   absl::StrCat("the file ends inside the value that starts "
                                "at byte ",
                                start, " (truncated?)"));
    }
  }
}

JsonItem JsonEventStream::Item(JsonItem::Kind kind, size_t length) {
  JsonItem item;
  item.kind = kind;
  item.value = std::string_view(buf_.data() + pos_, length);
  item.offset = base_ + pos_;
  item.capacity = buf_.size() - pos_;
  pos_ += length;
  return item;
}

absl::StatusOr<JsonItem> JsonEventStream::NextInArray() {
  while (true) {
    PODSCOPE_ASSIGN_OR_RETURN(auto have, SkipSpace());
    if (!have) {
      if (in_object_) {
        return Error(base_ + end_,
                     "the file ends inside the \"traceEvents\" array "
                     "(truncated?)");
      }
      // A bare array may lack its closing bracket.
      state_ = State::kDone;
      return JsonItem{};
    }
    const char c = buf_[pos_];
    if (c == ']') {
      ++pos_;
      if (in_object_) {
        state_ = State::kObjectComma;
        return NextMember();
      }
      state_ = State::kDone;
      PODSCOPE_ASSIGN_OR_RETURN(auto more, SkipSpace());
      if (more)
        return Error(base_ + pos_, "unexpected text after the JSON array");
      return JsonItem{};
    }
    if (state_ == State::kArrayNext) {
      if (c != ',') {
        return Error(base_ + pos_,
                     absl::StrCat("expected ',' or ']' between events, found '",
                                  std::string(1, c), "'"));
      }
      ++pos_;
      state_ = State::kArrayFirst;
      continue;
    }
    if (c == ',') {
      // "[," or ",,": an empty element. A trailing comma before the end
      // of a bare array is common in truncated traces and is tolerated
      // there; elsewhere it is an error.
      return Error(base_ + pos_, "unexpected ','");
    }
    PODSCOPE_ASSIGN_OR_RETURN(auto length, ValueLength());
    state_ = State::kArrayNext;
    return Item(JsonItem::kEvent, length);
  }
}

absl::StatusOr<JsonItem> JsonEventStream::NextMember() {
  while (true) {
    PODSCOPE_ASSIGN_OR_RETURN(auto have, SkipSpace());
    if (!have) {
      return Error(base_ + end_,
                   "the file ends inside the top-level object (truncated?)");
    }
    char c = buf_[pos_];
    if (state_ == State::kObjectComma || c == '}') {
      if (c == '}') {
        ++pos_;
        state_ = State::kDone;
        PODSCOPE_ASSIGN_OR_RETURN(auto more, SkipSpace());
        if (more) {
          return Error(base_ + pos_, "unexpected text after the JSON object");
        }
        return JsonItem{};
      }
      if (c != ',') {
        return Error(base_ + pos_,
                     absl::StrCat("expected ',' or '}' after a member, found '",
                                  std::string(1, c), "'"));
      }
      ++pos_;
      state_ = State::kObjectMember;
      continue;
    }
    if (c != '"') {
      return Error(base_ + pos_, absl::StrCat("expected a member name, found '",
                                              std::string(1, c), "'"));
    }
    PODSCOPE_ASSIGN_OR_RETURN(auto key_length, ValueLength());
    std::string key(buf_.data() + pos_ + 1, key_length - 2);
    pos_ += key_length;
    PODSCOPE_ASSIGN_OR_RETURN(have, SkipSpace());
    if (!have || buf_[pos_] != ':') {
      return Error(base_ + pos_,
                   absl::StrCat("expected ':' after member \"", key, "\""));
    }
    ++pos_;
    PODSCOPE_ASSIGN_OR_RETURN(have, SkipSpace());
    if (!have) {
      return Error(base_ + end_,
                   "the file ends inside the top-level object "
                   "(truncated?)");
    }
    if (key == "traceEvents") {
      if (buf_[pos_] != '[') {
        return Error(base_ + pos_, "\"traceEvents\" is not an array");
      }
      ++pos_;
      state_ = State::kArrayFirst;
      return NextInArray();
    }
    PODSCOPE_ASSIGN_OR_RETURN(auto length, ValueLength());
    state_ = State::kObjectComma;
    // The key's text lives in the buffer just before the value, unless the
    // buffer moved; keep a copy beside the item.
    JsonItem item = Item(JsonItem::kMember, length);
    member_key_ = std::move(key);
    item.key = member_key_;
    return item;
  }
}

absl::StatusOr<JsonItem> JsonEventStream::Next() {
  switch (state_) {
    case State::kStart: {
      // Whether 3 bytes are there or fewer, the checks below hold.
      PODSCOPE_RETURN_IF_ERROR(Ensure(3).status());
      // A UTF-8 byte order mark.
      if (end_ - pos_ >= 3 &&
          std::memcmp(buf_.data() + pos_, "\xEF\xBB\xBF", 3) == 0) {
        pos_ += 3;
      }
      PODSCOPE_ASSIGN_OR_RETURN(auto more, SkipSpace());
      if (!more) return Error(0, "the file is empty");
      const char c = buf_[pos_];
      if (c == '[') {
        ++pos_;
        state_ = State::kArrayFirst;
        return NextInArray();
      }
      if (c == '{') {
        ++pos_;
        in_object_ = true;
        state_ = State::kObjectMember;
        return NextMember();
      }
      return Error(base_ + pos_,
                   "not a JSON trace: expected '{' or '[' at the start");
    }
    case State::kObjectMember:
    case State::kObjectComma:
      return NextMember();
    case State::kArrayFirst:
    case State::kArrayNext:
      return NextInArray();
    case State::kDone:
      return JsonItem{};
  }
  return JsonItem{};
}

}  // namespace podscope::trace_format::json_internal
