// JSON text as strict parsers read it: escaping, numbers, and the writer's
// three layouts, each checked byte for byte and parsed back.
#include "podscope/base/json.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "simdjson.h"

namespace podscope::base {
namespace {

TEST(AppendJsonString, EscapesWhatJsonRequires) {
  std::string out;
  AppendJsonString("a\"b\\c/\n\r\t\b\f\x01\x1f\x7f", &out);
  EXPECT_EQ(out, "\"a\\\"b\\\\c/\\n\\r\\t\\b\\f\\u0001\\u001f\x7f\"");
  out.clear();
  AppendJsonString(std::string("nul\0in", 6), &out);
  EXPECT_EQ(out, "\"nul\\u0000in\"");
  out.clear();
  AppendJsonString("\xE6\x97\xA5\xF0\x9F\x9A\x80", &out);
  EXPECT_EQ(out, "\"\xE6\x97\xA5\xF0\x9F\x9A\x80\"") << "UTF-8 passes through";
}

TEST(AppendJsonString, InvalidUtf8StillMakesValidJson) {
  // A name cut in the middle of a character, a stray continuation byte, an
  // overlong encoding, a surrogate: strict JSON parsers reject these bytes.
  for (const std::string& bad :
       {std::string("cut \xE6\x97"), std::string("\x80stray"),
        std::string("over\xC0\xAFlong"), std::string("sur\xED\xA0\x80gate"),
        std::string("\xFF\xFE")}) {
    std::string json;
    AppendJsonString(bad, &json);
    simdjson::dom::parser parser;
    std::string_view value;
    EXPECT_EQ(parser.parse(json).get(value), simdjson::SUCCESS)
        << "not valid JSON: " << json;
    EXPECT_NE(value.find("\xEF\xBF\xBD"), std::string_view::npos)
        << "replaced with U+FFFD";
  }
}

TEST(AppendJsonDouble, ShortestRoundTripAndNullForNonFinite) {
  std::string out;
  AppendJsonDouble(0.1, &out);
  EXPECT_EQ(out, "0.1");
  out.clear();
  AppendJsonDouble(-2.5e-310, &out);
  EXPECT_EQ(std::strtod(out.c_str(), nullptr), -2.5e-310);
  out.clear();
  AppendJsonDouble(std::numeric_limits<double>::infinity(), &out);
  EXPECT_EQ(out, "null");
  out.clear();
  AppendJsonDouble(std::numeric_limits<double>::quiet_NaN(), &out);
  EXPECT_EQ(out, "null");
}

TEST(JsonWriter, PrettyIsIndentedAndValid) {
  std::string out;
  JsonWriter j(&out);
  j.BeginObject();
  j.Field("name", "a \"quoted\"\n\x01 name");
  j.Field("count", uint64_t{18446744073709551615u});
  j.Field("delta", int64_t{-5});
  j.Field("ok", true);
  j.Key("nothing").Null();
  j.Field("ratio", 0.1);
  j.Key("nan").Double(std::numeric_limits<double>::quiet_NaN());
  j.Key("empty").BeginArray().EndArray();
  j.Key("list").BeginArray().Int(1).BeginObject().EndObject().EndArray();
  j.EndObject();
  EXPECT_TRUE(j.complete());
  EXPECT_EQ(out,
            "{\n"
            "  \"name\": \"a \\\"quoted\\\"\\n\\u0001 name\",\n"
            "  \"count\": 18446744073709551615,\n"
            "  \"delta\": -5,\n"
            "  \"ok\": true,\n"
            "  \"nothing\": null,\n"
            "  \"ratio\": 0.1,\n"
            "  \"nan\": null,\n"
            "  \"empty\": [],\n"
            "  \"list\": [\n"
            "    1,\n"
            "    {}\n"
            "  ]\n"
            "}\n");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS);
  std::string_view name;
  ASSERT_EQ(doc["name"].get(name), simdjson::SUCCESS);
  EXPECT_EQ(name, "a \"quoted\"\n\x01 name");
  uint64_t count = 0;
  ASSERT_EQ(doc["count"].get(count), simdjson::SUCCESS);
  EXPECT_EQ(count, 18446744073709551615u);
}

TEST(JsonWriter, TopLevelArray) {
  std::string out;
  JsonWriter j(&out);
  EXPECT_FALSE(j.complete());
  j.BeginArray().String("x").EndArray();
  EXPECT_TRUE(j.complete());
  EXPECT_EQ(out, "[\n  \"x\"\n]\n");
}

TEST(JsonWriter, CompactHasNoWhitespace) {
  std::string out;
  JsonWriter j(&out, JsonLayout::kCompact);
  j.BeginObject()
      .Field("a", 1)
      .Key("b")
      .BeginArray()
      .Bool(false)
      .String("x y")
      .Double(2.5)
      .EndArray()
      .Key("c")
      .BeginObject()
      .EndObject()
      .EndObject();
  EXPECT_EQ(out, R"({"a":1,"b":[false,"x y",2.5],"c":{}})");
  // A more spacious layout cannot be asked for inside a compact one.
  out.clear();
  JsonWriter k(&out, JsonLayout::kCompact);
  k.BeginArray(JsonLayout::kPretty).Int(1).Int(2).EndArray();
  EXPECT_EQ(out, "[1,2]");
}

// The shape of a capture manifest: a pretty document whose per-worker
// records and clock samples are one line each.
TEST(JsonWriter, PrettyDocumentOfOneLineRecords) {
  std::string out;
  JsonWriter j(&out);
  j.BeginObject();
  j.Field("session", "run 1");
  j.Field("duration_ms", 500);
  j.Field("wall_ms", 512.25);
  j.Key("workers").BeginArray();
  for (int w = 0; w < 2; ++w) {
    j.BeginObject(JsonLayout::kOneLine);
    j.Field("address", w == 0 ? "10.0.0.1:7000" : "10.0.0.2:7000");
    j.Field("ok", w == 0);
    j.Key("clock").BeginArray();
    j.BeginObject().Field("offset_ns", int64_t{-12}).EndObject();
    j.BeginObject().Field("offset_ns", int64_t{9}).EndObject();
    j.EndArray();
    j.Field("drift_ppm", 1.5);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  EXPECT_EQ(out,
            "{\n"
            "  \"session\": \"run 1\",\n"
            "  \"duration_ms\": 500,\n"
            "  \"wall_ms\": 512.25,\n"
            "  \"workers\": [\n"
            "    {\"address\": \"10.0.0.1:7000\", \"ok\": true, \"clock\": "
            "[{\"offset_ns\": -12}, {\"offset_ns\": 9}], \"drift_ppm\": 1.5},\n"
            "    {\"address\": \"10.0.0.2:7000\", \"ok\": false, \"clock\": "
            "[{\"offset_ns\": -12}, {\"offset_ns\": 9}], \"drift_ppm\": 1.5}\n"
            "  ]\n"
            "}\n");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS);
  int64_t offset = 0;
  ASSERT_EQ(doc["workers"].at(1)["clock"].at(0)["offset_ns"].get(offset),
            simdjson::SUCCESS);
  EXPECT_EQ(offset, -12);
  bool ok = true;
  ASSERT_EQ(doc["workers"].at(1)["ok"].get(ok), simdjson::SUCCESS);
  EXPECT_FALSE(ok);
}

TEST(JsonWriter, FieldPicksTheJsonTypeFromTheCppType) {
  std::string out;
  JsonWriter j(&out, JsonLayout::kCompact);
  j.BeginObject()
      .Field("i", -3)
      .Field("u", 3u)
      .Field("ll", static_cast<long long>(-7))
      .Field("z", size_t{8})
      .Field("b", false)
      .Field("d", 0.5)
      .Field("f", 0.25f)
      .Field("s", std::string("str"))
      .Field("max", std::numeric_limits<uint64_t>::max())
      .Field("min", std::numeric_limits<int64_t>::min())
      .EndObject();
  EXPECT_EQ(out, R"({"i":-3,"u":3,"ll":-7,"z":8,"b":false,"d":0.5,"f":0.25,)"
                 R"("s":"str","max":18446744073709551615,)"
                 R"("min":-9223372036854775808})");
}

TEST(JsonWriter, KeysAreEscaped) {
  std::string out;
  JsonWriter j(&out, JsonLayout::kOneLine);
  j.BeginObject().Field("a\"b", "v").EndObject();
  EXPECT_EQ(out, R"({"a\"b": "v"})");
}

}  // namespace
}  // namespace podscope::base
