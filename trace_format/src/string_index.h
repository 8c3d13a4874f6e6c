// Internal to trace_format: a file's strings by id, as its strings records
// give them, in memory bounded by the strings the file really holds.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_STRING_INDEX_H_
#define PODSCOPE_TRACE_FORMAT_SRC_STRING_INDEX_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "podscope/base/coding.h"
#include "podscope/trace_format/record_io.h"

namespace podscope::trace_format {

// A strings record's payload (a proto::StringTable) read in place: its
// first id, and its strings as views of the payload.
class StringTableView {
 public:
  // False when the payload is not in the plain form every writer produces
  // (only varint, fixed and length-delimited fields, short varints, the
  // known fields in their own wire types); protobuf then decides.
  bool Parse(std::string_view payload);
  uint32_t first_id() const { return first_id_; }
  uint64_t count() const { return count_; }
  uint64_t bytes() const { return bytes_; }
  // Calls fn(std::string_view) for each string, in order.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    Walk(
        payload_, [](uint32_t) {}, fn);
  }

 private:
  template <typename IdFn, typename StringFn>
  static bool Walk(std::string_view payload, const IdFn& on_first_id,
                   const StringFn& on_string);
  std::string_view payload_;
  uint32_t first_id_ = 0;
  uint64_t count_ = 0;
  uint64_t bytes_ = 0;
};

// A growing array in blocks of 64 KiB that are never moved: growing it
// copies nothing and frees nothing, so the allocator is left no holes, and
// its memory is the elements and less than a block more.
template <typename T>
class BlockArray {
 public:
  size_t size() const { return size_; }
  T& operator[](size_t i) { return blocks_[i / kPer][i % kPer]; }
  const T& operator[](size_t i) const { return blocks_[i / kPer][i % kPer]; }
  void push_back(const T& v) {
    if (size_ == blocks_.size() * kPer) blocks_.push_back(NewBlock());
    blocks_[size_ / kPer][size_ % kPer] = v;
    ++size_;
  }
  // Grows to `n` elements, the new ones default-valued.
  void grow_to(size_t n) {
    while (blocks_.size() * kPer < n) blocks_.push_back(NewBlock());
    size_ = std::max(size_, n);
  }
  void clear() {
    blocks_.clear();
    size_ = 0;
  }

 private:
  static constexpr size_t kPer = (64 << 10) / sizeof(T);
  static std::unique_ptr<T[]> NewBlock() { return std::make_unique<T[]>(kPer); }
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t size_ = 0;
};

// Strings' bytes, addressed by a 32-bit offset: 1 MiB blocks, and a block
// of its own for a string over 256 KiB, each at an offset that is a
// multiple of 64 KiB. As BlockArray, growing moves nothing; a block wastes
// at most a quarter of itself.
class StringBytes {
 public:
  // Where `s` is stored, or false when the offsets would pass 4 GiB.
  bool Append(std::string_view s, uint32_t* offset);
  const char* at(uint32_t offset) const {
    return slots_[offset >> kSlotBits] + (offset & (kSlot - 1));
  }
  uint64_t size() const { return end_; }
  void clear();

 private:
  static constexpr int kSlotBits = 16;
  static constexpr uint64_t kSlot = uint64_t{1} << kSlotBits;
  static constexpr uint64_t kBlock = 1 << 20;
  static constexpr uint64_t kLarge = kBlock / 4;
  // Starts a block of `bytes` at the next multiple of kSlot.
  char* NewBlock(uint64_t bytes);
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<const char*> slots_;  // each kSlot of offsets: where it is
  uint64_t end_ = 0;                // the next offset in the current block
  uint64_t block_end_ = 0;          // the current block's end
  char* cursor_ = nullptr;          // where end_ is
};

class StringIndex {
 public:
  StringIndex() { Clear(); }

  // Adds `count` strings of `bytes` bytes in all with ids first_id,
  // first_id + 1, ...; for_each(put) calls put(std::string_view) for each.
  // An id given again replaces the string given before. `record_offset`
  // names the strings record in errors.
  template <typename ForEach>
  absl::Status Add(uint64_t record_offset, uint32_t first_id, uint64_t count,
                   uint64_t bytes, const ForEach& for_each);
  // After the last Add: makes the strings given far ids searchable.
  void Finish();
  // The string with id `id`, if the file gave one.
  std::optional<std::string_view> Find(uint32_t id) const;
  // Ids below this are held in one table (see TraceReader::string_count).
  size_t table_size() const { return table_.size(); }
  void Clear();

 private:
  struct Ref {
    uint32_t offset = 0;
    uint32_t length = kUnknown;
  };
  static constexpr uint32_t kUnknown = ~0u;
  // Consecutive ids given far beyond the table, by one record: ids
  // [first_id, first_id + count) are far_refs_[first_ref, ...).
  struct Run {
    uint32_t first_id;
    uint32_t count;
    uint32_t first_ref;
  };
  absl::Status Reserve(uint64_t record_offset, uint32_t first_id,
                       uint64_t count, uint64_t bytes, uint64_t* table_end);
  Ref Store(std::string_view s);
  // Resolves far runs that share ids: the last record given wins.
  void ResolveOverlaps();

  // A string costs its bytes and 8 more, however short.
  StringBytes bytes_;
  BlockArray<Ref> table_;
  BlockArray<Ref> far_refs_;
  std::vector<Run> far_runs_;  // by first_id once finished
  uint64_t held_ = 0;
};

template <typename IdFn, typename StringFn>
bool StringTableView::Walk(std::string_view payload, const IdFn& on_first_id,
                           const StringFn& on_string) {
  const char* p = payload.data();
  const char* const end = p + payload.size();
  // Varints of protobuf's own length or less; a longer one is left to
  // protobuf.
  auto varint = [&](uint64_t* v) {
    const char* start = p;
    p = base::DecodeVarint64(p, end, v);
    return p != nullptr && (p - start < 10 || static_cast<uint8_t>(p[-1]) <= 1);
  };
  while (p < end) {
    uint64_t tag = 0;
    if (!varint(&tag) || tag > 0xFFFFFFFFu || (tag >> 3) == 0) return false;
    const uint64_t field = tag >> 3;
    uint64_t v = 0;
    switch (tag & 7) {
      case 0:
        if (!varint(&v) || field == 2) return false;
        if (field == 1) on_first_id(static_cast<uint32_t>(v));
        break;
      case 1:
      case 5: {
        const size_t n = (tag & 7) == 1 ? 8 : 4;
        if (field <= 2 || static_cast<size_t>(end - p) < n) return false;
        p += n;
        break;
      }
      case 2:
        if (!varint(&v) || field == 1 || v > static_cast<uint64_t>(end - p) ||
            v > 0x7FFFFFFFu) {
          return false;
        }
        if (field == 2) on_string(std::string_view(p, v));
        p += v;
        break;
      default:
        return false;
    }
  }
  return true;
}

template <typename ForEach>
absl::Status StringIndex::Add(uint64_t record_offset, uint32_t first_id,
                              uint64_t count, uint64_t bytes,
                              const ForEach& for_each) {
  uint64_t table_end = 0;
  if (auto s = Reserve(record_offset, first_id, count, bytes, &table_end);
      !s.ok()) {
    return s;
  }
  uint64_t id = first_id;
  for_each([&](std::string_view str) {
    const Ref ref = Store(str);
    if (id < table_end) {
      table_[id] = ref;
    } else {
      far_refs_.push_back(ref);
    }
    ++id;
  });
  return absl::OkStatus();
}

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_STRING_INDEX_H_
