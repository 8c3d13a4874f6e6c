#include "podscope/viewer/name_column.h"

#include <algorithm>

namespace podscope::viewer {
namespace {

// Frees v's memory (`v = {}` would keep its capacity).
template <typename T, typename A>
void Release(std::vector<T, A>* v) {
  std::vector<T, A>().swap(*v);
}

}  // namespace

void NameColumn::Remap(std::span<const uint32_t> remap) {
  // Only the table when there is one: a code stands for the same name
  // before and after.
  const std::span<uint32_t> ids =
      bytes_ == 4 ? std::span<uint32_t>(wide_names_) : std::span(table_);
  for (uint32_t& n : ids) {
    n = n < remap.size() ? remap[n] : 0;
  }
}

size_t NameColumn::resident_bytes() const {
  return codes8_.capacity() + codes16_.capacity() * sizeof(uint16_t) +
         table_.capacity() * sizeof(uint32_t) +
         wide_names_.capacity() * sizeof(uint32_t);
}

NameColumnBuilder::NameColumnBuilder(size_t size) : size_(size) {
  column_.codes8_.resize(size);
}

void NameColumnBuilder::SetSlow(uint32_t i, uint32_t name) {
  NameColumn& c = column_;
  if (c.bytes_ == 4) {
    c.wide_names_[i] = name;
    return;
  }
  if (name >= kMaxDirectIds) {
    while (c.bytes_ != 4) Widen();
    c.wide_names_[i] = name;
    return;
  }
  if (name >= code_of_.size()) {
    code_of_.resize(
        std::max<size_t>({name + size_t{1}, 2 * code_of_.size(), size_t{1024}}),
        0);
  }
  if (code_of_[name] == 0) {
    const size_t codes = c.bytes_ == 1 ? size_t{1} << 8 : size_t{1} << 16;
    if (c.table_.size() == codes) {
      Widen();
      SetSlow(i, name);
      return;
    }
    c.table_.push_back(name);
    code_of_[name] = static_cast<uint32_t>(c.table_.size());
  }
  const uint32_t code = code_of_[name] - 1;
  if (c.bytes_ == 1) {
    c.codes8_[i] = static_cast<uint8_t>(code);
  } else {
    c.codes16_[i] = static_cast<uint16_t>(code);
  }
}

void NameColumnBuilder::Widen() {
  // Names not set yet hold code 0 until their Set: a placeholder.
  NameColumn& c = column_;
  if (c.bytes_ == 1) {
    c.codes16_.assign(c.codes8_.begin(), c.codes8_.end());
    Release(&c.codes8_);
    c.bytes_ = 2;
    return;
  }
  c.wide_names_.resize(size_);
  if (!c.table_.empty()) {
    for (size_t i = 0; i < size_; ++i)
      c.wide_names_[i] = c.table_[c.codes16_[i]];
  }
  Release(&c.codes16_);
  Release(&c.table_);
  Release(&code_of_);
  c.bytes_ = 4;
}

NameColumn NameColumnBuilder::Finish() && {
  column_.table_.shrink_to_fit();
  return std::move(column_);
}

}  // namespace podscope::viewer
