// The name of each slice of one track in 2 bytes: a code into the track's
// own table of the names it uses. A track repeats the few names of its
// code over and over, so the table is small and stays in cache; a track
// that uses more than 65,536 names keeps the 4-byte string ids instead.
#ifndef PODSCOPE_VIEWER_NAME_COLUMN_H_
#define PODSCOPE_VIEWER_NAME_COLUMN_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace podscope::viewer {

class NameColumn {
 public:
  // The most names a track's table holds.
  static constexpr size_t kMaxCodes = 1 << 16;

  uint32_t operator[](uint32_t i) const {
    return wide_ ? wide_names_[i] : table_[codes_[i]];
  }
  size_t size() const { return wide_ ? wide_names_.size() : codes_.size(); }
  // Whether the names are stored as 4-byte ids (more than kMaxCodes names).
  bool wide() const { return wide_; }
  [[gnu::always_inline]] void Prefetch(uint32_t i) const {
    if (wide_) {
      __builtin_prefetch(wide_names_.data() + i);
    } else {
      __builtin_prefetch(codes_.data() + i);
    }
  }
  // Replaces each name id n with remap[n] (0 when n is past its end).
  void Remap(std::span<const uint32_t> remap);
  size_t resident_bytes() const;

 private:
  friend class NameColumnBuilder;
  bool wide_ = false;
  std::vector<uint16_t> codes_;
  std::vector<uint32_t> table_;       // by code: the name's string id
  std::vector<uint32_t> wide_names_;  // wide_ only
};

// Fills a column of `size` names, set in any order, each exactly once.
class NameColumnBuilder {
 public:
  explicit NameColumnBuilder(size_t size);
  void Set(uint32_t i, uint32_t name) {
    if (!column_.wide_ && name < code_of_.size()) [[likely]] {
      const uint32_t code = code_of_[name];
      if (code != 0) [[likely]] {
        column_.codes_[i] = static_cast<uint16_t>(code - 1);
        return;
      }
    }
    SetSlow(i, name);
  }
  NameColumn Finish() &&;

 private:
  void SetSlow(uint32_t i, uint32_t name);
  void MakeWide();

  NameColumn column_;
  // By name id: its code + 1, or 0 when not in the table yet. Ids past
  // kMaxDirectIds (from a damaged or hostile file) make the column wide
  // rather than this table huge.
  static constexpr uint32_t kMaxDirectIds = 1 << 20;
  std::vector<uint32_t> code_of_;
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_NAME_COLUMN_H_
