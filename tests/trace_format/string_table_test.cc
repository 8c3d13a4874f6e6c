// A file's strings as the reader gives them back (TraceReader::GetString):
// every size of string, ids given more than once, ids far beyond the
// others, and strings records in any form protobuf accepts.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {
namespace {

std::string Start() {
  proto::Metadata m;
  m.set_host("strings");
  return EncodeFileHeader() + EncodeRecord(RecordType::kMetadata,
                                           RecordEncoding::kRaw,
                                           m.SerializeAsString());
}

std::string Strings(uint32_t first_id, const std::vector<std::string>& s,
                    bool compressed = false) {
  proto::StringTable table;
  table.set_first_id(first_id);
  for (const std::string& x : s) table.add_strings(x);
  return compressed ? EncodeCompressedRecord(RecordType::kStrings,
                                             table.SerializeAsString(), 6)
                    : EncodeRecord(RecordType::kStrings, RecordEncoding::kRaw,
                                   table.SerializeAsString());
}

// Opens `file` both by scanning and (it has no index) through the same
// scan with every record verified; both must give the same strings.
std::unique_ptr<TraceReader> Open(const std::string& file) {
  auto reader = TraceReader::OpenBuffer(file, "strings.podtrace");
  EXPECT_TRUE(reader.ok()) << reader.status();
  return reader.ok() ? *std::move(reader) : nullptr;
}

TEST(StringTable, EverySizeOfStringReadsBackExactly) {
  // Empty, short, across the reader's 1 MiB blocks, and longer than a
  // block, raw and compressed.
  std::vector<std::string> strings;
  for (size_t size : {0, 1, 7, 1000, 200 << 10, 300 << 10, 700 << 10,
                      (1 << 20) + 1, 3 << 20, 5, 0, 250 << 10}) {
    std::string s(size, '\0');
    for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i * 31 + size);
    strings.push_back(s);
  }
  std::vector<std::string> half(strings.begin(), strings.begin() + 6);
  std::vector<std::string> rest(strings.begin() + 6, strings.end());
  const std::string file =
      Start() + Strings(1, half) + Strings(7, rest, /*compressed=*/true) +
      Strings(5000, strings) + Strings(4000000000u, strings);
  auto reader = Open(file);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->report().skipped.empty());
  for (size_t i = 0; i < strings.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(reader->GetString(1 + i), strings[i]);
    EXPECT_EQ(reader->GetString(5000 + i), strings[i]);
    EXPECT_EQ(reader->GetString(4000000000u + i), strings[i]);
  }
  EXPECT_EQ(reader->GetString(0), "");
  EXPECT_EQ(reader->GetString(13), "<lost string>");
  EXPECT_EQ(reader->GetString(3999999999u), "<lost string>");
}

// However a file gives an id more than once, near the others or far
// beyond them, in overlapping records, the last string given is the one
// read.
TEST(StringTable, AnIdGivenAgainReadsAsTheLastGiven) {
  struct Given {
    uint32_t first_id;
    int count;
  };
  const std::vector<Given> given = {
      {1, 10},
      {5, 3},
      {3000000000u, 10},
      {3000000005u, 10},
      {2999999990u, 12},
      {3000000003u, 1},
      {8, 6},
      {3000000000u, 2},
      {100000, 5},
      {100002, 1},
      {99999, 3},
      {2, 1},
  };
  std::map<uint32_t, std::string> expected;
  std::string file = Start();
  for (size_t r = 0; r < given.size(); ++r) {
    std::vector<std::string> s;
    for (int k = 0; k < given[r].count; ++k) {
      s.push_back("r" + std::to_string(r) + "." + std::to_string(k));
      expected[given[r].first_id + k] = s.back();
    }
    file += Strings(given[r].first_id, s, /*compressed=*/r % 2 == 1);
  }
  auto reader = Open(file);
  ASSERT_NE(reader, nullptr);
  for (const auto& [id, s] : expected) {
    EXPECT_EQ(reader->GetString(id), s) << "id " << id;
  }
  EXPECT_EQ(reader->GetString(3000000015u), "<lost string>");
  EXPECT_LE(reader->string_count(), 100u);
}

TEST(StringTable, RecordsInAnyFormProtobufAcceptsAreRead) {
  // Fields out of order, first_id given twice (the last counts), unknown
  // fields of every wire type, a group: what a newer writer may write.
  std::string payload;
  payload +=
      "\x12\x01"
      "a";                    // strings: "a"
  payload += "\x08\x09";      // first_id 9
  payload += "\x18\x80\x01";  // field 3, varint
  payload +=
      "\x21"
      "12345678";  // field 4, fixed64
  payload +=
      "\x2d"
      "1234";  // field 5, fixed32
  payload +=
      "\x32\x02"
      "zz";                               // field 6, bytes
  payload += std::string("\x12\x00", 2);  // strings: ""
  payload += "\x08\x14";                  // first_id 20
  payload += "\x3b\x40\x01\x3c";          // field 7, a group holding a varint
  payload +=
      "\x12\x02"
      "bc";  // strings: "bc"
  const std::string file =
      Start() +
      EncodeRecord(RecordType::kStrings, RecordEncoding::kRaw, payload);
  auto reader = Open(file);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->report().skipped.empty());
  EXPECT_EQ(reader->GetString(20), "a");
  EXPECT_EQ(reader->GetString(21), "");
  EXPECT_EQ(reader->GetString(22), "bc");
  EXPECT_EQ(reader->GetString(9), "<lost string>");
}

TEST(StringTable, AStringsRecordThatIsNotAMessageIsReportedByOffset) {
  const std::string start = Start();
  const std::string bad =
      EncodeRecord(RecordType::kStrings, RecordEncoding::kRaw,
                   "\x12\x05"
                   "ab");
  auto reader = Open(start + bad + Strings(1, {"after"}));
  ASSERT_NE(reader, nullptr);
  const RecoveryReport report = reader->report();
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].offset, start.size());
  EXPECT_EQ(report.skipped[0].bytes, bad.size());
  EXPECT_EQ(report.skipped[0].reason,
            "strings record at offset " + std::to_string(start.size()) +
                ": payload is not a valid podscope.trace_format.proto."
                "StringTable message");
  EXPECT_EQ(reader->GetString(1), "after");
}

}  // namespace
}  // namespace podscope::trace_format
