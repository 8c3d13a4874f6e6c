// Internal to trace_format: framing shared by the record encoders.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_RECORD_FRAMING_H_
#define PODSCOPE_TRACE_FORMAT_SRC_RECORD_FRAMING_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"

namespace podscope::trace_format {

// Fills in the header (length, CRC, type, encoding) of `record`, whose
// payload already follows its kRecordHeaderSize header bytes.
void WriteRecordHeader(RecordType type, RecordEncoding encoding,
                       std::string* record);

// Why the header at `offset` of `file` cannot start a record of it (type,
// encoding, length against the limit and the bytes left), or an empty
// string and its payload length. Reads the header only.
std::string CheckRecordHeader(std::string_view file, uint64_t offset,
                              uint32_t* length);

// Whether the CRC of the record at `offset` (whose header passed
// CheckRecordHeader) matches; fills in `record` when it does.
bool CheckRecordCrc(std::string_view file, uint64_t offset, uint32_t length,
                    RecordView* record);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_RECORD_FRAMING_H_
