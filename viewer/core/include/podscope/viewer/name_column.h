// The name of each slice of one track as a code into the track's own table
// of the names it uses: one byte a slice while the track uses at most 256
// names, two up to 65,536, and the 4-byte string ids beyond. A track
// repeats the few names of its code over and over (a training loop's
// steps, layers, ops and kernels), so the table is small and stays in
// cache.
#ifndef PODSCOPE_VIEWER_NAME_COLUMN_H_
#define PODSCOPE_VIEWER_NAME_COLUMN_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "podscope/base/huge_pages.h"

namespace podscope::viewer {

class NameColumn {
 public:
  uint32_t operator[](uint32_t i) const {
    if (bytes_ == 1) return table_[codes8_[i]];
    if (bytes_ == 2) return table_[codes16_[i]];
    return wide_names_[i];
  }
  // Bytes a slice's name takes: 1, 2 or 4.
  int bytes_per_name() const { return bytes_; }
  // For scans that aggregate by name a run at a time: the codes (one or
  // two bytes a name, by bytes_per_name()) and the string id of each code.
  const uint8_t* codes8() const { return codes8_.data(); }
  const uint16_t* codes16() const { return codes16_.data(); }
  std::span<const uint32_t> table() const { return table_; }
  [[gnu::always_inline]] void Prefetch(uint32_t i) const {
    if (bytes_ == 1) {
      __builtin_prefetch(codes8_.data() + i);
    } else if (bytes_ == 2) {
      __builtin_prefetch(codes16_.data() + i);
    } else {
      __builtin_prefetch(wide_names_.data() + i);
    }
  }
  // Replaces each name id n with remap[n] (0 when n is past its end).
  void Remap(std::span<const uint32_t> remap);
  size_t resident_bytes() const;

 private:
  friend class NameColumnBuilder;
  // The codes are a track's size and kept: in huge pages
  // (base::HugePageAllocator).
  template <typename T>
  using Codes = std::vector<T, base::HugePageAllocator<T>>;
  int bytes_ = 1;
  Codes<uint8_t> codes8_;        // bytes_ == 1
  Codes<uint16_t> codes16_;      // bytes_ == 2
  std::vector<uint32_t> table_;  // by code: the name's string id
  Codes<uint32_t> wide_names_;   // bytes_ == 4
};

// Fills a column of `size` names, set in any order, each exactly once.
class NameColumnBuilder {
 public:
  explicit NameColumnBuilder(size_t size);
  void Set(uint32_t i, uint32_t name) {
    if (name < code_of_.size()) [[likely]] {
      const uint32_t code = code_of_[name];
      if (code != 0 && column_.bytes_ == 1) [[likely]] {
        column_.codes8_[i] = static_cast<uint8_t>(code - 1);
        return;
      }
      if (code != 0 && column_.bytes_ == 2) {
        column_.codes16_[i] = static_cast<uint16_t>(code - 1);
        return;
      }
    }
    SetSlow(i, name);
  }
  NameColumn Finish() &&;

 private:
  void SetSlow(uint32_t i, uint32_t name);
  void Widen();  // to 2 bytes a name, or from 2 to 4

  size_t size_;
  NameColumn column_;
  // By name id: its code + 1, or 0 when not in the table yet (always 0
  // once the column holds ids). Ids past kMaxDirectIds (from a damaged or
  // hostile file) make the column hold ids rather than this table huge.
  static constexpr uint32_t kMaxDirectIds = 1 << 20;
  std::vector<uint32_t> code_of_;
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_NAME_COLUMN_H_
