// Scanning a possibly damaged file for every intact record, in work linear
// in its size.
#include <string>

#include "absl/strings/str_format.h"
#include "podscope/base/coding.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"
#include "record_framing.h"

namespace podscope::trace_format {

RecordScanner::RecordScanner(std::string_view file)
    : file_(file),
      pos_(kFileHeaderSize),
      budget_(2 * file.size() + (1 << 20)) {}

namespace {

// The CRC covers the length, type and encoding besides the payload.
uint64_t CrcCost(uint32_t length) { return uint64_t{length} + 6; }

}  // namespace

inline bool RecordScanner::Unaffordable(uint32_t length) {
  if (CrcCost(length) <= budget_) return false;
  ++unchecked_;
  return true;
}

RecordScanner::Crc RecordScanner::Verify(uint64_t offset, uint32_t length,
                                         RecordView* record) {
  const uint64_t cost = CrcCost(length);
  if (Unaffordable(length)) return Crc::kUnchecked;
  crc_bytes_ += cost;
  if (CheckRecordCrc(file_, offset, length, record)) return Crc::kIntact;
  budget_ -= cost;
  return Crc::kDamaged;
}

inline bool RecordScanner::Plausible(uint64_t offset, uint32_t* length) const {
  const uint64_t left = file_.size() - offset;
  if (left < kRecordHeaderSize) return false;
  const char* p = file_.data() + offset;
  const uint8_t type = static_cast<uint8_t>(p[8]);
  if (type == 0 || type > kMaxRecordType ||
      static_cast<uint8_t>(p[9]) > static_cast<uint8_t>(RecordEncoding::kZlib))
    return false;
  *length = base::DecodeFixed32(p);
  return *length <= kMaxRecordPayload && *length <= left - kRecordHeaderSize;
}

inline bool RecordScanner::Anchored(uint64_t offset, uint32_t length) const {
  const uint64_t end = offset + kRecordHeaderSize + length;
  if (file_.size() - end < kRecordHeaderSize) return true;
  const char* p = file_.data() + end;
  const uint8_t type = static_cast<uint8_t>(p[8]);
  return type != 0 && type <= kMaxRecordType &&
         static_cast<uint8_t>(p[9]) <=
             static_cast<uint8_t>(RecordEncoding::kZlib) &&
         base::DecodeFixed32(p) <= kMaxRecordPayload;
}

bool RecordScanner::Next(RecordView* record) {
  if (pos_ >= file_.size()) return false;
  if (have_anchor_ && pos_ == anchor_.offset) {
    // Found and checked by a resynchronisation already.
    have_anchor_ = false;
    *record = anchor_;
    pos_ += record->size();
    return true;
  }
  uint32_t length = 0;
  std::string reason = CheckRecordHeader(file_, pos_, &length);
  if (reason.empty()) {
    switch (Verify(pos_, length, record)) {
      case Crc::kIntact:
        pos_ += record->size();
        return true;
      case Crc::kDamaged:
        reason = "CRC mismatch";
        break;
      case Crc::kUnchecked:
        reason = "record not CRC-checked";
        break;
    }
  }
  clean_end_ = false;
  return Resync(std::move(reason), record);
}

bool RecordScanner::Resync(std::string reason, RecordView* record) {
  const uint64_t damage = pos_;
  const uint64_t unchecked_before = unchecked_;
  const uint64_t size = file_.size();
  uint32_t length = 0;
  // First the next intact record that ends where a record or the file can
  // end: in a file damaged by accident, the only candidates that pass that
  // test cheaply are real records. A search that got past `damage` before
  // found nothing earlier, so it is not repeated.
  if (searched_to_ <= damage) {
    have_anchor_ = false;
    searched_to_ = size;
    for (uint64_t c = damage + 1; c + kRecordHeaderSize <= size; ++c) {
      if (!Plausible(c, &length) || Unaffordable(length) ||
          !Anchored(c, length)) {
        continue;
      }
      if (Verify(c, length, &anchor_) == Crc::kIntact) {
        have_anchor_ = true;
        searched_to_ = c;
        break;
      }
    }
  }
  // Then an intact record before it that ends at damage (the record after
  // it is damaged too). Offsets searched here lie after the previous
  // resynchronisation's, so every offset is searched at most twice.
  const uint64_t limit = searched_to_;
  uint64_t found = size;
  for (uint64_t c = damage + 1; c + kRecordHeaderSize <= limit; ++c) {
    if (!Plausible(c, &length) || c + kRecordHeaderSize + length > limit ||
        Unaffordable(length) || Anchored(c, length)) {
      continue;
    }
    if (Verify(c, length, record) == Crc::kIntact) {
      found = c;
      break;
    }
  }
  if (found == size && have_anchor_) {
    found = anchor_.offset;
    *record = anchor_;
    have_anchor_ = false;
  }
  if (unchecked_ > unchecked_before) {
    absl::StrAppendFormat(
        &reason,
        "; %d candidate records in this range were not CRC-checked: the "
        "scan's budget for damaged records (twice the file size) is spent",
        unchecked_ - unchecked_before);
  }
  skipped_.push_back({damage, found - damage, std::move(reason)});
  if (found == size) {
    pos_ = size;
    return false;
  }
  pos_ = found + record->size();
  return true;
}

}  // namespace podscope::trace_format
