// Record framing: the file header, a record's header and CRC, and checking
// the record at an offset.
#include "record_framing.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "crc32.h"
#include "podscope/base/coding.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"

namespace podscope::trace_format {
namespace {

uint32_t RecordCrc(const char* length_bytes, uint8_t type, uint8_t encoding,
                   std::string_view payload) {
  char head[6];
  std::memcpy(head, length_bytes, 4);
  head[4] = static_cast<char>(type);
  head[5] = static_cast<char>(encoding);
  return Crc32(Crc32(0, head, 6), payload.data(), payload.size());
}

}  // namespace

void WriteRecordHeader(RecordType type, RecordEncoding encoding,
                       std::string* record) {
  const std::string_view payload =
      std::string_view(*record).substr(kRecordHeaderSize);
  char* p = record->data();
  base::EncodeFixed32(p, static_cast<uint32_t>(payload.size()));
  p[8] = static_cast<char>(type);
  p[9] = static_cast<char>(encoding);
  base::EncodeFixed32(p + 4,
                      RecordCrc(p, static_cast<uint8_t>(type),
                                static_cast<uint8_t>(encoding), payload));
}

std::string_view RecordTypeName(RecordType type) {
  switch (type) {
    case RecordType::kMetadata:
      return "metadata";
    case RecordType::kStrings:
      return "strings";
    case RecordType::kTracks:
      return "tracks";
    case RecordType::kStacks:
      return "stacks";
    case RecordType::kClock:
      return "clock";
    case RecordType::kChunk:
      return "chunk";
    case RecordType::kDropCounts:
      return "drop-counts";
    case RecordType::kIndex:
      return "index";
    case RecordType::kTrailer:
      return "trailer";
  }
  return "unknown";
}

std::string EncodeFileHeader() {
  std::string header(kFileHeaderSize, '\0');
  std::memcpy(header.data(), kMagic, sizeof(kMagic));
  base::EncodeFixed16(header.data() + 8, kMajorVersion);
  base::EncodeFixed16(header.data() + 10, kMinorVersion);
  base::EncodeFixed32(header.data() + 12, 0);  // flags: none defined
  return header;
}

absl::Status CheckFileHeader(std::string_view data, std::string_view what) {
  if (data.size() < kFileHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "%s: too short for a Podscope trace (%d bytes, the header alone is "
        "%d)",
        what, data.size(), kFileHeaderSize));
  }
  if (std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what),
        ": not a Podscope trace file (bad magic bytes at offset 0)"));
  }
  const uint16_t major = base::DecodeFixed16(data.data() + 8);
  const uint16_t minor = base::DecodeFixed16(data.data() + 10);
  if (major > kMajorVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: written in trace format version %d.%d, newer than this reader "
        "(which reads major version %d); upgrade Podscope to read it",
        what, major, minor, kMajorVersion));
  }
  if (major == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what), ": invalid trace format version 0.", minor));
  }
  return absl::OkStatus();
}
std::string EncodeRecord(RecordType type, RecordEncoding encoding,
                         std::string_view payload) {
  std::string out(kRecordHeaderSize + payload.size(), '\0');
  std::memcpy(out.data() + kRecordHeaderSize, payload.data(), payload.size());
  WriteRecordHeader(type, encoding, &out);
  return out;
}

RecordFrame PeekRecordFrame(std::string_view header) {
  RecordFrame frame;
  frame.payload_length = base::DecodeFixed32(header.data());
  frame.type = static_cast<RecordType>(static_cast<uint8_t>(header[8]));
  return frame;
}

std::string CheckRecordHeader(std::string_view file, uint64_t offset,
                              uint32_t* length) {
  const uint64_t remaining = file.size() - offset;
  if (remaining < kRecordHeaderSize) {
    return absl::StrFormat("torn record header (%d of %d bytes present)",
                           remaining, kRecordHeaderSize);
  }
  const char* p = file.data() + offset;
  *length = base::DecodeFixed32(p);
  const uint8_t type = static_cast<uint8_t>(p[8]);
  const uint8_t encoding = static_cast<uint8_t>(p[9]);
  if (type == 0 || type > kMaxRecordType) {
    return absl::StrFormat("unknown record type %d", type);
  }
  if (encoding > static_cast<uint8_t>(RecordEncoding::kZlib)) {
    return absl::StrFormat("unknown record encoding %d", encoding);
  }
  if (*length > kMaxRecordPayload) {
    return absl::StrFormat("record length %d exceeds the %d-byte limit",
                           *length, kMaxRecordPayload);
  }
  if (*length > remaining - kRecordHeaderSize) {
    return absl::StrFormat(
        "torn record: header says %d payload bytes, only %d remain", *length,
        remaining - kRecordHeaderSize);
  }
  return {};
}

bool CheckRecordCrc(std::string_view file, uint64_t offset, uint32_t length,
                    RecordView* record) {
  const char* p = file.data() + offset;
  const uint8_t type = static_cast<uint8_t>(p[8]);
  const uint8_t encoding = static_cast<uint8_t>(p[9]);
  std::string_view payload(p + kRecordHeaderSize, length);
  if (RecordCrc(p, type, encoding, payload) != base::DecodeFixed32(p + 4)) {
    return false;
  }
  record->offset = offset;
  record->type = static_cast<RecordType>(type);
  record->encoding = static_cast<RecordEncoding>(encoding);
  record->payload = payload;
  return true;
}

std::string ValidateRecord(std::string_view file, uint64_t offset,
                           RecordView* record) {
  uint32_t length = 0;
  std::string reason = CheckRecordHeader(file, offset, &length);
  if (!reason.empty()) return reason;
  if (!CheckRecordCrc(file, offset, length, record)) return "CRC mismatch";
  return {};
}

absl::StatusOr<RecordView> ReadRecordAt(std::string_view file,
                                        uint64_t offset) {
  if (offset < kFileHeaderSize || offset >= file.size()) {
    return absl::DataLossError(
        absl::StrFormat("record offset %d is outside the file (%d bytes)",
                        offset, file.size()));
  }
  RecordView record;
  std::string reason = ValidateRecord(file, offset, &record);
  if (!reason.empty()) {
    return absl::DataLossError(
        absl::StrFormat("record at offset %d: %s", offset, reason));
  }
  return record;
}

}  // namespace podscope::trace_format
