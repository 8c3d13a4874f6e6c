#include "podscope/viewer/name_column.h"

#include <algorithm>

namespace podscope::viewer {

void NameColumn::Remap(std::span<const uint32_t> remap) {
  // Only the table when there is one: a code stands for the same name
  // before and after.
  for (uint32_t& n : wide_ ? wide_names_ : table_) {
    n = n < remap.size() ? remap[n] : 0;
  }
}

size_t NameColumn::resident_bytes() const {
  return codes_.capacity() * sizeof(uint16_t) +
         table_.capacity() * sizeof(uint32_t) +
         wide_names_.capacity() * sizeof(uint32_t);
}

NameColumnBuilder::NameColumnBuilder(size_t size) {
  column_.codes_.resize(size);
}

void NameColumnBuilder::SetSlow(uint32_t i, uint32_t name) {
  if (column_.wide_) {
    column_.wide_names_[i] = name;
    return;
  }
  if (name >= kMaxDirectIds || column_.table_.size() == NameColumn::kMaxCodes) {
    MakeWide();
    column_.wide_names_[i] = name;
    return;
  }
  if (name >= code_of_.size()) {
    code_of_.resize(
        std::max<size_t>({name + size_t{1}, 2 * code_of_.size(), size_t{1024}}),
        0);
  }
  if (code_of_[name] == 0) {
    column_.table_.push_back(name);
    code_of_[name] = static_cast<uint32_t>(column_.table_.size());
  }
  column_.codes_[i] = static_cast<uint16_t>(code_of_[name] - 1);
}

void NameColumnBuilder::MakeWide() {
  NameColumn& c = column_;
  c.wide_names_.resize(c.codes_.size());
  // Names not set yet get a placeholder their Set overwrites.
  if (!c.table_.empty()) {
    for (size_t i = 0; i < c.codes_.size(); ++i) {
      c.wide_names_[i] = c.table_[c.codes_[i]];
    }
  }
  c.wide_ = true;
  c.codes_ = {};
  c.table_ = {};
  code_of_ = {};
}

NameColumn NameColumnBuilder::Finish() && {
  column_.table_.shrink_to_fit();
  return std::move(column_);
}

}  // namespace podscope::viewer
