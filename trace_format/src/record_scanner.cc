// Scanning a possibly damaged file for every intact record.
#include <string>

#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"

namespace podscope::trace_format {

RecordScanner::RecordScanner(std::string_view file)
    : file_(file), pos_(kFileHeaderSize) {}

bool RecordScanner::Next(RecordView* record) {
  if (pos_ >= file_.size()) return false;
  std::string reason = ValidateRecord(file_, pos_, record);
  if (reason.empty()) {
    pos_ += record->size();
    return true;
  }
  // Damage: find the next offset that holds an intact record.
  const uint64_t damage = pos_;
  clean_end_ = false;
  for (uint64_t candidate = damage + 1; candidate < file_.size(); ++candidate) {
    if (ValidateRecord(file_, candidate, record).empty()) {
      skipped_.push_back({damage, candidate - damage, std::move(reason)});
      pos_ = candidate + record->size();
      return true;
    }
  }
  skipped_.push_back({damage, file_.size() - damage, std::move(reason)});
  pos_ = file_.size();
  return false;
}

}  // namespace podscope::trace_format
