#include "podscope/trace_format/trailer.h"

#include "absl/strings/str_format.h"
#include "podscope/base/coding.h"
#include "podscope/trace_format/format.h"

namespace podscope::trace_format {

void Trailer::EncodeTo(std::string* dst) const {
  char payload[kTrailerPayloadSize];
  base::EncodeFixed64(payload, index_offset);
  dst->append(EncodeRecord(RecordType::kTrailer, RecordEncoding::kRaw,
                           std::string_view(payload, sizeof(payload))));
}

absl::Status Trailer::DecodeFrom(const RecordView& record) {
  if (record.type != RecordType::kTrailer) {
    return absl::DataLossError(
        absl::StrFormat("the record at offset %d is a %s record, not a trailer",
                        record.offset, RecordTypeName(record.type)));
  }
  if (record.payload.size() != kTrailerPayloadSize) {
    return absl::DataLossError(absl::StrFormat(
        "the trailer at offset %d holds %d bytes, not %d", record.offset,
        record.payload.size(), kTrailerPayloadSize));
  }
  index_offset = base::DecodeFixed64(record.payload.data());
  return absl::OkStatus();
}

absl::Status Trailer::ReadFromEnd(std::string_view file) {
  if (file.size() < kFileHeaderSize + kTrailerRecordSize) {
    return absl::DataLossError("the file is too short to end in a trailer");
  }
  RecordView record;
  const std::string reason =
      ValidateRecord(file, file.size() - kTrailerRecordSize, &record);
  if (!reason.empty()) {
    return absl::DataLossError(
        absl::StrFormat("no intact trailer at the end: %s", reason));
  }
  return DecodeFrom(record);
}

}  // namespace podscope::trace_format
