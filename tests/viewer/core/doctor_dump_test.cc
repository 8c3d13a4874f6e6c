// The job doctor's journal reader (doctor_dump.h) on the format
// docs/doctor.md describes: a journal as a rank writes it is read whole;
// every cut of it, wrong types, newer versions and files beyond the limits
// are refused with the file's name and the field; a folder without
// journals is not a dump.
#include "podscope/viewer/doctor_dump.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "trace_gen.h"

namespace podscope::viewer {
namespace {

constexpr std::string_view kJournal = R"({
  "format": "podscope.doctor.journal",
  "version": 1,
  "rank": 1,
  "pid": 4712,
  "host": "h",
  "clock": "job",
  "verdict": "all_reduce #3 of group world (f32 x 1024, sum) has waited 1.7 s",
  "verdict_kind": "stalled",
  "verdict_rank": 1,
  "verdict_group": "world",
  "verdict_sequence": 3,
  "written_ns": 9000,
  "where": {"tid": 4712, "main_thread": true, "scopes": ["train_step", "data_loading", "read_batch"], "innermost_since_ns": 6000, "last_event_ns": 6000},
  "entries": [
    {"group": "world", "sequence": 2, "collective_id": "world#2", "kind": "all_reduce", "dtype": "f32", "count": 1024, "op": "sum", "scopes": ["train_step", "backward", "grad_sync"], "tid": 4712, "entered_ns": 5000, "finished_ns": 5500, "ok": true}
  ]
}
)";

TEST(DoctorJournal, ReadsAJournalAsARankWritesIt) {
  auto j = ParseJournal(kJournal, "d/h.4712.journal.json");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->version, 1);
  EXPECT_EQ(j->rank, 1);
  EXPECT_EQ(j->pid, 4712);
  EXPECT_EQ(j->written_ns, 9000);
  EXPECT_EQ(j->verdict.kind, "stalled");
  EXPECT_EQ(j->verdict.rank, 1);
  EXPECT_EQ(j->verdict.group, "world");
  EXPECT_EQ(j->verdict.sequence, 3);
  ASSERT_TRUE(j->where.has_value());
  EXPECT_EQ(j->where->scopes, (std::vector<std::string>{
                                  "train_step", "data_loading", "read_batch"}));
  EXPECT_EQ(j->where->innermost_since_ns, 6000);
  ASSERT_EQ(j->entries.size(), 1u);
  EXPECT_EQ(j->entries[0].kind, "all_reduce");
  EXPECT_EQ(j->entries[0].finished_ns, 5500);
}

// Every prefix of a journal is refused, naming the file: never a crash,
// never half a journal taken for a whole one.
TEST(DoctorJournal, EveryCutOfAJournalIsRefusedNamingTheFile) {
  const std::string text(kJournal);
  const size_t end = text.find_last_of('}');
  for (size_t n = 0; n < end; ++n) {
    auto j = ParseJournal(text.substr(0, n), "d/cut.journal.json");
    ASSERT_FALSE(j.ok()) << n;
    EXPECT_NE(j.status().message().find("d/cut.journal.json: "),
              std::string::npos)
        << j.status();
  }
}

std::string With(std::string_view from, std::string_view to) {
  std::string text(kJournal);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(DoctorJournal, WrongTypesAndNewerVersionsNameTheField) {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {With(R"("rank": 1,)", R"("rank": "one",)"),
       "f: field 'rank' is not an integer"},
      {With(R"("version": 1)", R"("version": 2)"),
       "f: field 'version' is 2; this reader knows up to 1"},
      {With(R"("format": "podscope.doctor.journal")", R"("format": "x")"),
       "f: field 'format' is 'x', expected 'podscope.doctor.journal'"},
      {With(R"("clock": "job")", R"("clock": "wall")"),
       "f: field 'clock' is 'wall', expected 'job'"},
      {With(R"("entered_ns": 5000)", R"("entered_ns": 5.5)"),
       "f: field 'entries[0].entered_ns' is not an integer"},
      {With(R"("finished_ns": 5500)", R"("finished_ns": 4000)"),
       "f: field 'entries[0].finished_ns' is before entered_ns"},
      {With(R"("scopes": ["train_step", "data_loading", "read_batch"])",
            R"("scopes": ["train_step", 7])"),
       "f: field 'where.scopes' holds something other than strings"},
      {With(R"("entries": [)", R"("entries": 3, "x": [)"),
       "f: field 'entries' is not an array"},
      {"[1, 2]", "f: not a journal (expected a JSON object)"},
  };
  for (const Case& c : cases) {
    auto j = ParseJournal(c.text, "f");
    ASSERT_FALSE(j.ok()) << c.message;
    EXPECT_EQ(j.status().message(), c.message);
  }
}

TEST(DoctorJournal, LimitsAreEnforced) {
  std::string many = R"({"rank": 0, "entries": [)";
  for (size_t i = 0; i <= JournalLimits::kMaxEntries; ++i) {
    if (i > 0) many += ",";
    many +=
        R"({"group": "g", "sequence": 0, "kind": "barrier", "entered_ns": 1})";
  }
  many += "]}";
  auto j = ParseJournal(many, "f");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(),
            "f: field 'entries' has more than 1024 entries");

  std::string deep = R"({"rank": 0, "where": {"scopes": [)";
  for (size_t i = 0; i <= JournalLimits::kMaxScopes; ++i) {
    deep += i > 0 ? ",\"s\"" : "\"s\"";
  }
  deep += R"(]}, "entries": []})";
  j = ParseJournal(deep, "f");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(),
            "f: field 'where.scopes' has more than 16 scopes");

  const std::string long_name(JournalLimits::kMaxString + 1, 'x');
  j = ParseJournal(
      R"({"rank": 0, "host": ")" + long_name + R"(", "entries": []})", "f");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "f: field 'host' is longer than 1024 bytes");

  j = ParseJournal(std::string(JournalLimits::kMaxFileBytes + 1, ' '), "f");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("larger than"), std::string::npos);
}

TEST(DoctorJournal, AFolderWithoutJournalsIsNotADump) {
  const std::string dir = testing::TempDir("doctor_none");
  EXPECT_FALSE(ReadDoctorDump(dir).has_value());
  EXPECT_FALSE(ReadDoctorDump(dir + "/absent").has_value());
  std::ofstream(dir + "/a.journal.json") << kJournal;
  std::ofstream(dir + "/b.journal.json") << "{\"rank\": ";
  auto dump = ReadDoctorDump(dir);
  ASSERT_TRUE(dump.has_value());
  ASSERT_EQ(dump->journals.size(), 1u);
  ASSERT_EQ(dump->problems.size(), 1u);
  EXPECT_EQ(dump->problems[0].rfind(dir + "/b.journal.json: not a complete "
                                          "JSON journal",
                                    0),
            0u)
      << dump->problems[0];
}

}  // namespace
}  // namespace podscope::viewer
