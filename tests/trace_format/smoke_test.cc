#include <gtest/gtest.h>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"

namespace podscope::trace_format {
namespace {

TEST(Smoke, NestedSlicesInEndOrderRoundTrip) {
  std::string data;
  auto writer = TraceWriter::Create(MakeStringSink(&data));
  ASSERT_TRUE(writer.ok()) << writer.status();
  proto::Metadata m;
  m.set_host("h");
  m.set_pid(42);
  (*writer)->SetMetadata(m);
  proto::Track t;
  t.set_name("main");
  const uint32_t track = (*writer)->AddTrack(t);
  const uint32_t a = (*writer)->InternString("a");
  const uint32_t b = (*writer)->InternString("b");
  // End order, as a recorder produces: children first.
  (*writer)->AddSlice(track, 110, 10, b);
  (*writer)->AddSlice(track, 130, 20, b);
  (*writer)->AddSlice(track, 100, 100, a);
  (*writer)->AddSlice(track, 200, 0, b);
  ASSERT_TRUE((*writer)->Close().ok());

  auto reader = TraceReader::OpenBuffer(data, "mem");
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->report().intact());
  EXPECT_EQ((*reader)->metadata().host(), "h");
  TrackEvents e = (*reader)->ReadTrack(track);
  ASSERT_EQ(e.slices.size(), 4u);
  EXPECT_EQ(e.slices[0], (Slice{100, 100, a, 0}));
  EXPECT_EQ(e.slices[1], (Slice{110, 10, b, 1}));
  EXPECT_EQ(e.slices[2], (Slice{130, 20, b, 1}));
  // Closed intervals: an empty slice at its parent's end is inside it.
  EXPECT_EQ(e.slices[3], (Slice{200, 0, b, 1}));
}

}  // namespace
}  // namespace podscope::trace_format
