// File-level constants of the Podscope trace format: the header, the record
// framing and the record types. docs/trace-format.md is the specification.
#ifndef PODSCOPE_TRACE_FORMAT_FORMAT_H_
#define PODSCOPE_TRACE_FORMAT_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace podscope::trace_format {

// "\x89PODTRC\n": the high byte catches 7-bit transfers, the newline catches
// line-ending conversions (as PNG does).
inline constexpr char kMagic[8] = {'\x89', 'P', 'O', 'D', 'T', 'R', 'C', '\n'};
inline constexpr uint16_t kMajorVersion = 1;
inline constexpr uint16_t kMinorVersion = 2;
// magic(8) major(2) minor(2) flags(4)
inline constexpr size_t kFileHeaderSize = 16;

// [length u32][crc u32][type u8][encoding u8][payload: length bytes]
// crc is the CRC-32 of length, type, encoding and payload, all
// little-endian.
inline constexpr size_t kRecordHeaderSize = 10;
// No record is larger than this; a larger length is damage.
inline constexpr uint32_t kMaxRecordPayload = 256u << 20;

enum class RecordType : uint8_t {
  kMetadata = 1,
  kStrings = 2,
  kTracks = 3,
  kStacks = 4,
  kClock = 5,
  kChunk = 6,
  kDropCounts = 7,
  kIndex = 8,
  // Fixed size, last in a closed file: the offset of the index record.
  kTrailer = 9,
};
inline constexpr uint8_t kMaxRecordType = 9;

enum class RecordEncoding : uint8_t {
  kRaw = 0,
  kZlib = 1,
};

// The trailer's payload is the index record's offset as a u64.
inline constexpr size_t kTrailerPayloadSize = 8;
inline constexpr size_t kTrailerRecordSize =
    kRecordHeaderSize + kTrailerPayloadSize;

std::string_view RecordTypeName(RecordType type);

// The file name convention: <host>.<pid>.podtrace
inline constexpr std::string_view kFileExtension = ".podtrace";

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_FORMAT_H_
