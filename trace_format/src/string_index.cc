#include "string_index.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"

namespace podscope::trace_format {
namespace {

// How far past the table's end a record may start and still extend it: a
// gap is the strings of a lost record. Beyond it the strings are kept as
// far runs, so that an id chosen by a hostile file cannot make the table
// allocate a slot for every id below it.
constexpr uint64_t kMaxGap = 1 << 16;

}  // namespace

bool StringTableView::Parse(std::string_view payload) {
  payload_ = payload;
  first_id_ = 0;
  count_ = 0;
  bytes_ = 0;
  return Walk(
      payload, [&](uint32_t id) { first_id_ = id; },
      [&](std::string_view s) {
        ++count_;
        bytes_ += s.size();
      });
}

char* StringBytes::NewBlock(uint64_t bytes) {
  // After the last block's offsets, so that slot i covers offsets
  // [i * kSlot, (i + 1) * kSlot).
  const uint64_t start = (block_end_ + kSlot - 1) & ~(kSlot - 1);
  const uint64_t slots = (bytes + kSlot - 1) / kSlot;
  if (start + slots * kSlot > (uint64_t{1} << 32)) return nullptr;
  end_ = start;
  blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
  char* base = blocks_.back().get();
  for (uint64_t i = 0; i < slots; ++i) slots_.push_back(base + i * kSlot);
  block_end_ = end_ + bytes;
  return base;
}

bool StringBytes::Append(std::string_view s, uint32_t* offset) {
  if (s.size() > block_end_ - end_) {
    const uint64_t size = s.size() > kLarge ? s.size() : kBlock;
    cursor_ = NewBlock(std::max<uint64_t>(size, 1));
    if (cursor_ == nullptr) return false;
  }
  *offset = static_cast<uint32_t>(end_);
  if (!s.empty()) std::memcpy(cursor_, s.data(), s.size());
  cursor_ += s.size();
  end_ += s.size();
  return true;
}

void StringBytes::clear() {
  blocks_.clear();
  slots_.clear();
  end_ = block_end_ = 0;
  cursor_ = nullptr;
}

void StringIndex::Clear() {
  bytes_.clear();
  table_.clear();
  table_.push_back(Ref{0, 0});  // id 0 is the empty string
  far_refs_.clear();
  far_runs_.clear();
  held_ = 0;
}

absl::Status StringIndex::Reserve(uint64_t record_offset, uint32_t first_id,
                                  uint64_t count, uint64_t bytes,
                                  uint64_t* table_end) {
  const uint64_t end = uint64_t{first_id} + count;
  if (end > (uint64_t{1} << 32)) {
    return absl::DataLossError(absl::StrFormat(
        "strings record at offset %d: ids up to %d do not fit in 32 bits",
        record_offset, end));
  }
  // Blocks waste at most a third of what they hold, and a block of slack.
  if (bytes_.size() + bytes + bytes / 2 + (2 << 20) >= kUnknown) {
    return absl::DataLossError(absl::StrFormat(
        "strings record at offset %d: the file's strings exceed 4 GiB",
        record_offset));
  }
  if (far_refs_.size() + count >= kUnknown) {
    return absl::DataLossError(absl::StrFormat(
        "strings record at offset %d: the file gives more than 4 G strings "
        "far beyond the others",
        record_offset));
  }
  held_ += count;
  const uint64_t size = table_.size();
  // Ids the table covers go in it; so do ids that continue it, as long as
  // the table stays within twice the strings held.
  if (end > size && first_id <= size + kMaxGap && end <= 2 * held_ + kMaxGap) {
    table_.grow_to(end);
  }
  *table_end = std::max<uint64_t>(first_id, std::min<uint64_t>(end, size));
  if (table_.size() >= end) *table_end = end;
  if (*table_end < end) {
    far_runs_.push_back({static_cast<uint32_t>(*table_end),
                         static_cast<uint32_t>(end - *table_end),
                         static_cast<uint32_t>(far_refs_.size())});
  }
  return absl::OkStatus();
}

StringIndex::Ref StringIndex::Store(std::string_view s) {
  Ref ref;
  // Reserve() left room for every string: a string that still does not fit
  // is lost rather than stored out of bounds.
  if (bytes_.Append(s, &ref.offset))
    ref.length = static_cast<uint32_t>(s.size());
  return ref;
}

void StringIndex::Finish() {
  // By first id, and for runs that start at the same id in the order given
  // (first_ref grows with every record).
  std::sort(far_runs_.begin(), far_runs_.end(), [](const Run& a, const Run& b) {
    return a.first_id != b.first_id ? a.first_id < b.first_id
                                    : a.first_ref < b.first_ref;
  });
  uint64_t reach = 0;
  for (const Run& r : far_runs_) {
    if (r.first_id < reach) {
      ResolveOverlaps();
      break;
    }
    reach = uint64_t{r.first_id} + r.count;
  }
}

void StringIndex::ResolveOverlaps() {
  // Rewritten in place: a cluster's pieces take the places of its runs,
  // and the few pieces beyond those go to `extra`.
  size_t out = 0;
  std::vector<Run> extra;
  std::vector<std::pair<uint32_t, uint32_t>> ids;  // (id, ref) of a cluster
  size_t i = 0;
  while (i < far_runs_.size()) {
    // A cluster: runs that share ids with an earlier run of it.
    size_t j = i + 1;
    uint64_t reach = uint64_t{far_runs_[i].first_id} + far_runs_[i].count;
    while (j < far_runs_.size() && far_runs_[j].first_id < reach) {
      reach =
          std::max(reach, uint64_t{far_runs_[j].first_id} + far_runs_[j].count);
      ++j;
    }
    if (j == i + 1) {
      far_runs_[out++] = far_runs_[i++];
      continue;
    }
    // Every id of the cluster with its string; for an id given more than
    // once the last (largest ref), then runs of consecutive ids and refs.
    // Costs 8 bytes per string of the cluster, for as long as this runs.
    ids.clear();
    for (; i < j; ++i) {
      const Run& r = far_runs_[i];
      for (uint32_t k = 0; k < r.count; ++k) {
        ids.emplace_back(r.first_id + k, r.first_ref + k);
      }
    }
    std::sort(ids.begin(), ids.end());
    Run piece{};
    auto emit = [&] {
      if (out < j) {
        far_runs_[out++] = piece;
      } else {
        extra.push_back(piece);
      }
    };
    for (size_t k = 0; k < ids.size(); ++k) {
      if (k + 1 < ids.size() && ids[k + 1].first == ids[k].first) continue;
      const auto [id, ref] = ids[k];
      if (piece.count > 0 && uint64_t{piece.first_id} + piece.count == id &&
          uint64_t{piece.first_ref} + piece.count == ref) {
        ++piece.count;
        continue;
      }
      if (piece.count > 0) emit();
      piece = {id, 1, ref};
    }
    emit();
  }
  far_runs_.resize(out);
  if (!extra.empty()) {
    far_runs_.insert(far_runs_.end(), extra.begin(), extra.end());
    std::sort(
        far_runs_.begin(), far_runs_.end(),
        [](const Run& a, const Run& b) { return a.first_id < b.first_id; });
  }
}

std::optional<std::string_view> StringIndex::Find(uint32_t id) const {
  const Ref* ref = nullptr;
  if (id < table_.size() && table_[id].length != kUnknown) {
    ref = &table_[id];
  } else if (!far_runs_.empty()) {
    auto it = std::upper_bound(
        far_runs_.begin(), far_runs_.end(), id,
        [](uint32_t id, const Run& r) { return id < r.first_id; });
    if (it != far_runs_.begin()) {
      --it;
      if (id - it->first_id < it->count) {
        ref = &far_refs_[it->first_ref + (id - it->first_id)];
      }
    }
  }
  if (ref == nullptr || ref->length == kUnknown) return std::nullopt;
  if (ref->length == 0) return std::string_view();
  return std::string_view(bytes_.at(ref->offset), ref->length);
}

}  // namespace podscope::trace_format
