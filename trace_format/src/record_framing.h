// Internal to trace_format: framing shared by the record encoders.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_RECORD_FRAMING_H_
#define PODSCOPE_TRACE_FORMAT_SRC_RECORD_FRAMING_H_

#include <string>

#include "podscope/trace_format/format.h"

namespace podscope::trace_format {

// Fills in the header (length, CRC, type, encoding) of `record`, whose
// payload already follows its kRecordHeaderSize header bytes.
void WriteRecordHeader(RecordType type, RecordEncoding encoding,
                       std::string* record);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_RECORD_FRAMING_H_
