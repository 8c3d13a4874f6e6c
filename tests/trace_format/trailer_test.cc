// The trailer record: its bytes as docs/trace-format.md specifies them, and
// what decoding says about records that are not a trailer.
#include "podscope/trace_format/trailer.h"

#include <gtest/gtest.h>

#include <string>

#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"

namespace podscope::trace_format {
namespace {

TEST(Trailer, EncodesTheIndexOffsetAsALittleEndianU64Record) {
  std::string out = "prefix";
  Trailer{0x0102030405060708ull}.EncodeTo(&out);
  ASSERT_EQ(out.size(), 6 + kTrailerRecordSize);
  const std::string_view record = std::string_view(out).substr(6);
  EXPECT_EQ(record.substr(0, 4), std::string_view("\x08\0\0\0", 4))
      << "payload length 8";
  EXPECT_EQ(static_cast<uint8_t>(record[8]),
            static_cast<uint8_t>(RecordType::kTrailer));
  EXPECT_EQ(static_cast<uint8_t>(record[9]),
            static_cast<uint8_t>(RecordEncoding::kRaw));
  EXPECT_EQ(record.substr(kRecordHeaderSize),
            std::string_view("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
}

TEST(Trailer, ReadsBackFromTheEndOfAFile) {
  std::string file = EncodeFileHeader();
  file += EncodeRecord(RecordType::kIndex, RecordEncoding::kRaw, "xyz");
  Trailer{kFileHeaderSize}.EncodeTo(&file);
  Trailer trailer;
  ASSERT_TRUE(trailer.ReadFromEnd(file).ok());
  EXPECT_EQ(trailer.index_offset, kFileHeaderSize);
  const uint64_t big = ~uint64_t{0} - 5;
  std::string other = EncodeFileHeader();
  Trailer{big}.EncodeTo(&other);
  ASSERT_TRUE(trailer.ReadFromEnd(other).ok());
  EXPECT_EQ(trailer.index_offset, big);
}

TEST(Trailer, AFileWithoutOneSaysWhy) {
  std::string file = EncodeFileHeader();
  Trailer trailer;
  absl::Status s = trailer.ReadFromEnd(file);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("too short"), std::string_view::npos) << s;

  // An intact record of the trailer's size but another type.
  file += EncodeRecord(RecordType::kStrings, RecordEncoding::kRaw,
                       std::string(kTrailerPayloadSize, 'x'));
  s = trailer.ReadFromEnd(file);
  EXPECT_NE(s.message().find("strings record, not a trailer"),
            std::string_view::npos)
      << s;

  // A torn one: the last byte flipped breaks its CRC.
  std::string torn = EncodeFileHeader();
  Trailer{42}.EncodeTo(&torn);
  torn.back() ^= 1;
  s = trailer.ReadFromEnd(torn);
  EXPECT_NE(s.message().find("CRC mismatch"), std::string_view::npos) << s;
}

TEST(Trailer, DecodeRefusesAWrongSizedPayload) {
  std::string file = EncodeFileHeader();
  file += EncodeRecord(RecordType::kTrailer, RecordEncoding::kRaw, "1234");
  auto record = ReadRecordAt(file, kFileHeaderSize);
  ASSERT_TRUE(record.ok());
  Trailer trailer;
  const absl::Status s = trailer.DecodeFrom(*record);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("holds 4 bytes, not 8"), std::string_view::npos)
      << s;
}

}  // namespace
}  // namespace podscope::trace_format
