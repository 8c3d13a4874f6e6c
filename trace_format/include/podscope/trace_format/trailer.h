// The trailer: the fixed-size last record of a closed file, holding the
// offset of the index record. Encoded here and decoded here only.
//
// Contract: EncodeTo appends one whole framed record of kTrailerRecordSize
// bytes (type kTrailer, raw encoding, the offset as a little-endian u64).
// DecodeFrom accepts an intact record (as ValidateRecord or the scanner
// return it) only when it is a trailer of exactly kTrailerPayloadSize
// bytes, and otherwise says what it is instead. ReadFromEnd finds the
// trailer that ends a file, as a reader looks for it first.
#ifndef PODSCOPE_TRACE_FORMAT_TRAILER_H_
#define PODSCOPE_TRACE_FORMAT_TRAILER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "podscope/trace_format/record_io.h"

namespace podscope::trace_format {

struct Trailer {
  uint64_t index_offset = 0;

  void EncodeTo(std::string* dst) const;
  absl::Status DecodeFrom(const RecordView& record);

  // The trailer in the last kTrailerRecordSize bytes of `file` (which
  // starts with the file header). An error when the file does not end in
  // an intact trailer record: the writer did not close it.
  absl::Status ReadFromEnd(std::string_view file);
};

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_TRAILER_H_
