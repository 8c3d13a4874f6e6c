// The Huffman-only inflater (trace_format/src/huffman_inflate.h) reads what
// the writer's Huffman coder writes, declines every other stream, and never
// accepts a stream that zlib would read otherwise.
#include "huffman_inflate.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "huffman_deflate.h"

namespace podscope::trace_format {
namespace {

std::string HuffmanDeflate(const std::vector<std::string>& parts,
                           const std::string& stored) {
  std::vector<std::string_view> views(parts.begin(), parts.end());
  size_t total = stored.size();
  for (const std::string& p : parts) total += p.size();
  std::string out(DeflatedBound(total, parts.size() + 1), '\0');
  out.resize(DeflateHuffmanParts(views, stored, out.data()));
  return out;
}

std::string ZlibDeflate(const std::string& data, int level) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// zlib's reading of `stream` as the reader asks for it: exactly `size`
// bytes, or nothing.
bool ZlibInflate(const std::string& stream, size_t size, std::string* out) {
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK) return false;
  out->assign(size + 1, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stream.data()));
  zs.avail_in = static_cast<uInt>(stream.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(size + 1);
  const int rc = inflate(&zs, Z_FINISH);
  const size_t produced = zs.total_out;
  inflateEnd(&zs);
  out->resize(size);
  return rc == Z_STREAM_END && produced == size;
}

bool FastInflate(const std::string& stream, size_t size, std::string* out) {
  out->assign(size, '\0');
  return InflateHuffmanLiterals(reinterpret_cast<const uint8_t*>(stream.data()),
                                stream.size(),
                                reinterpret_cast<uint8_t*>(out->data()), size);
}

// Bytes shaped like packed sections: a few frequent values, a long tail,
// runs of zeros, and a random part that codes no better stored.
std::vector<std::string> Sections(std::mt19937_64& rng) {
  std::vector<std::string> parts;
  std::geometric_distribution<int> skewed(0.02);
  for (size_t size : {size_t{1}, size_t{100}, size_t{70000}, size_t{5000}}) {
    std::string p(size, '\0');
    for (char& c : p) c = static_cast<char>(std::min(skewed(rng), 255));
    parts.push_back(std::move(p));
  }
  std::string flat(3000, '\0');
  for (char& c : flat) c = static_cast<char>(rng());
  parts.push_back(std::move(flat));
  return parts;
}

TEST(HuffmanInflate, ReadsWhatTheWriterWrites) {
  std::mt19937_64 rng(1);
  const std::vector<std::string> parts = Sections(rng);
  std::string stored(80000, '\0');
  for (char& c : stored) c = static_cast<char>(rng());
  std::string want;
  for (const std::string& p : parts) want += p;
  want += stored;
  const std::string stream = HuffmanDeflate(parts, stored);
  ASSERT_LT(stream.size(), want.size());
  std::string got;
  ASSERT_TRUE(FastInflate(stream, want.size(), &got));
  EXPECT_EQ(got, want);
  // Any other size is refused, as zlib's reading is.
  EXPECT_FALSE(FastInflate(stream, want.size() - 1, &got));
  EXPECT_FALSE(FastInflate(stream, want.size() + 1, &got));
}

TEST(HuffmanInflate, LeavesStreamsWithMatchesToZlib) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "step " + std::to_string(i % 7) + ";";
  for (int level : {1, 6, 9}) {
    const std::string stream = ZlibDeflate(text, level);
    std::string got;
    EXPECT_FALSE(FastInflate(stream, text.size(), &got)) << "level " << level;
  }
}

// Damaged streams: whenever the fast inflater accepts one, zlib reads the
// same bytes from it.
TEST(HuffmanInflate, NeverDisagreesWithZlibOnDamagedStreams) {
  std::mt19937_64 rng(2);
  std::vector<std::string> parts;
  std::string want;
  for (int i = 0; i < 3; ++i) {
    std::string p(300 + 200 * i, '\0');
    for (char& c : p) c = static_cast<char>(rng() % (8 + 60 * i));
    want += p;
    parts.push_back(std::move(p));
  }
  const std::string stream = HuffmanDeflate(parts, "stored");
  want += "stored";
  int accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string damaged = stream;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      damaged[rng() % damaged.size()] ^= static_cast<char>(1u << (rng() % 8));
    }
    if (rng() % 8 == 0) damaged.resize(rng() % damaged.size());
    const size_t size =
        rng() % 4 == 0 ? rng() % (2 * want.size()) : want.size();
    std::string fast, slow;
    if (FastInflate(damaged, size, &fast)) {
      ++accepted;
      ASSERT_TRUE(ZlibInflate(damaged, size, &slow)) << "trial " << trial;
      ASSERT_EQ(fast, slow) << "trial " << trial;
    }
  }
  // Flips in the coded bytes still make valid streams: the comparison ran.
  EXPECT_GT(accepted, 100);
}

TEST(HuffmanInflate, EmptyAndTruncatedInput) {
  std::string got;
  EXPECT_FALSE(FastInflate("", 0, &got));
  const std::string stream = HuffmanDeflate({std::string(1000, 'a')}, "");
  for (size_t cut = 0; cut < stream.size(); ++cut) {
    EXPECT_FALSE(FastInflate(stream.substr(0, cut), 1000, &got)) << cut;
  }
  ASSERT_TRUE(FastInflate(stream, 1000, &got));
  EXPECT_EQ(got, std::string(1000, 'a'));
}

}  // namespace
}  // namespace podscope::trace_format
