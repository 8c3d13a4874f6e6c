// A Huffman-only deflate encoder (RFC 1951 dynamic and stored blocks).
#include "huffman_deflate.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "podscope/base/coding.h"
#include "podscope/base/cpu_dispatch.h"

namespace podscope::trace_format {
namespace {

// zlib 1.2's Z_HUFFMAN_ONLY codes about 80-120 MB/s; packed chunk sections
// need nothing more than one Huffman table per section, which this writes
// as standard deflate blocks (RFC 1951) several times faster. Readers
// inflate them with zlib as any other stream.
class DeflateBits {
 public:
  explicit DeflateBits(char* out)
      : p_(reinterpret_cast<uint8_t*>(out)), start_(p_) {}
  // Fewer than 8 bits wait in the accumulator between calls; every call
  // stores 8 bytes and keeps what is not yet a whole byte, so the output
  // needs 8 bytes of slack past the stream.
  void Put(uint64_t bits, uint32_t n) {  // n <= 56
    acc_ |= bits << n_;
    n_ += n;
    std::memcpy(p_, &acc_, 8);
    p_ += n_ >> 3;
    acc_ >>= n_ & ~7u;
    n_ &= 7;
  }
  // Codes of `n` bytes through `table` (code << 5 | length, lengths at
  // most 15): three codes fit one store with the bits waiting.
  void Symbols(const uint8_t* data, size_t n, const uint32_t* table) {
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
      const uint32_t a = table[data[i]], b = table[data[i + 1]],
                     c = table[data[i + 2]];
      const uint32_t la = a & 31, lb = b & 31, lc = c & 31;
      const uint64_t bits = uint64_t{a >> 5} | (uint64_t{b >> 5} << la) |
                            (uint64_t{c >> 5} << (la + lb));
      Put(bits, la + lb + lc);
    }
    for (; i < n; ++i) Put(table[data[i]] >> 5, table[data[i]] & 31);
  }
  void AlignToByte() {
    if (n_ > 0) *p_++ = static_cast<uint8_t>(acc_);
    acc_ = 0;
    n_ = 0;
  }
  void Stored(const uint8_t* data, size_t n, bool final) {
    Put(final ? 1 : 0, 3);
    AlignToByte();
    const uint16_t len = static_cast<uint16_t>(n);
    const uint16_t nlen = static_cast<uint16_t>(~len);
    base::EncodeFixed16(reinterpret_cast<char*>(p_), len);
    base::EncodeFixed16(reinterpret_cast<char*>(p_) + 2, nlen);
    p_ += 4;
    if (n > 0) std::memcpy(p_, data, n);
    p_ += n;
  }
  size_t size() const { return static_cast<size_t>(p_ - start_); }

 private:
  uint8_t* p_;
  uint8_t* start_;
  uint64_t acc_ = 0;
  uint32_t n_ = 0;
};

// Code lengths of a Huffman code for freq[0..n), n <= 288, none over
// `limit` bits (frequencies are halved until the tree fits); 0 for unused
// symbols.
void HuffmanLengths(const uint32_t* freq, int n, uint32_t limit, uint8_t* len) {
  constexpr int kMaxSymbols = 288;
  uint32_t f[kMaxSymbols];
  std::copy(freq, freq + n, f);
  // Leaves sorted by (weight, symbol), one integer each.
  uint64_t leaves[kMaxSymbols];
  uint64_t weight[2 * kMaxSymbols];
  int32_t parent[2 * kMaxSymbols];
  uint32_t depth[2 * kMaxSymbols];
  while (true) {
    std::fill(len, len + n, 0);
    size_t m = 0;
    for (int i = 0; i < n; ++i) {
      if (f[i] > 0)
        leaves[m++] = (uint64_t{f[i]} << 16) | static_cast<uint32_t>(i);
    }
    if (m == 0) return;
    if (m == 1) {
      len[leaves[0] & 0xFFFF] = 1;
      return;
    }
    std::sort(leaves, leaves + m);
    // Nodes 0..m-1 are the leaves in order, m.. the merged ones, whose
    // weights come out in order: two queues build the tree in O(m).
    for (size_t i = 0; i < m; ++i) {
      weight[i] = leaves[i] >> 16;
      parent[i] = -1;
    }
    size_t next_leaf = 0, next_node = m;
    auto take = [&](size_t made) {
      if (next_leaf < m &&
          (next_node >= made || weight[next_leaf] <= weight[next_node])) {
        return next_leaf++;
      }
      return next_node++;
    };
    for (size_t made = m; made < 2 * m - 1; ++made) {
      const size_t a = take(made);
      const size_t b = take(made);
      weight[made] = weight[a] + weight[b];
      parent[made] = -1;
      parent[a] = static_cast<int32_t>(made);
      parent[b] = static_cast<int32_t>(made);
    }
    // Depths from the root (the last node) down.
    uint32_t deepest = 0;
    for (size_t i = 2 * m - 1; i-- > 0;) {
      depth[i] = parent[i] >= 0 ? depth[static_cast<size_t>(parent[i])] + 1 : 0;
      if (i < m) deepest = std::max(deepest, depth[i]);
    }
    if (deepest <= limit) {
      for (size_t i = 0; i < m; ++i) {
        len[leaves[i] & 0xFFFF] = static_cast<uint8_t>(depth[i]);
      }
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (f[i] > 0) f[i] = (f[i] + 1) / 2;
    }
  }
}

// Canonical codes (RFC 1951 3.2.2), bit-reversed for an LSB-first writer.
void CanonicalCodes(const uint8_t* len, int n, uint32_t* code) {
  uint32_t count[16] = {0}, next[16] = {0};
  for (int i = 0; i < n; ++i) ++count[len[i]];
  count[0] = 0;
  uint32_t c = 0;
  for (int bits = 1; bits < 16; ++bits) {
    c = (c + count[bits - 1]) << 1;
    next[bits] = c;
  }
  for (int i = 0; i < n; ++i) {
    if (len[i] == 0) continue;
    uint32_t v = next[len[i]]++, r = 0;
    for (int b = 0; b < len[i]; ++b) {
      r = (r << 1) | (v & 1);
      v >>= 1;
    }
    code[i] = r;
  }
}

// One block: dynamic Huffman codes for the bytes, or stored when that is
// smaller. Never final.
void HuffmanBlock(const uint8_t* data, size_t n, DeflateBits* out) {
  uint32_t freq[257] = {0};
  {
    // Four histograms: consecutive equal bytes do not wait on each other.
    uint32_t h[4][256] = {};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      ++h[0][data[i]];
      ++h[1][data[i + 1]];
      ++h[2][data[i + 2]];
      ++h[3][data[i + 3]];
    }
    for (; i < n; ++i) ++h[0][data[i]];
    for (int b = 0; b < 256; ++b)
      freq[b] = h[0][b] + h[1][b] + h[2][b] + h[3][b];
  }
  freq[256] = 1;           // end of block
  uint8_t len[258] = {0};  // 257 literal/length codes, then 1 distance code
  HuffmanLengths(freq, 257, 15, len);
  uint64_t data_bits = 0;
  for (int i = 0; i < 257; ++i) data_bits += uint64_t{freq[i]} * len[i];
  // The code lengths, zero runs shortened with codes 17 and 18.
  struct Cl {
    uint8_t symbol, extra_bits;
    uint8_t extra;
  };
  Cl cl[258];
  int cl_count = 0;
  uint32_t cl_freq[19] = {0};
  for (int i = 0; i < 258;) {
    if (len[i] == 0) {
      int run = 1;
      while (i + run < 258 && len[i + run] == 0 && run < 138) ++run;
      if (run >= 11) {
        cl[cl_count++] = {18, 7, static_cast<uint8_t>(run - 11)};
        i += run;
        ++cl_freq[18];
        continue;
      }
      if (run >= 3) {
        cl[cl_count++] = {17, 3, static_cast<uint8_t>(run - 3)};
        i += run;
        ++cl_freq[17];
        continue;
      }
    }
    cl[cl_count++] = {len[i], 0, 0};
    ++cl_freq[len[i]];
    ++i;
  }
  // zlib requires a complete code-length code: at least two symbols.
  int used = 0;
  for (uint32_t f : cl_freq) used += f > 0;
  if (used < 2) ++cl_freq[cl_freq[0] > 0 ? 1 : 0];
  uint8_t cl_len[19];
  HuffmanLengths(cl_freq, 19, 7, cl_len);
  static constexpr uint8_t kOrder[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                         11, 4,  12, 3, 13, 2, 14, 1, 15};
  int hclen = 19;
  while (hclen > 4 && cl_len[kOrder[hclen - 1]] == 0) --hclen;
  uint64_t header_bits = 3 + 5 + 5 + 4 + 3 * static_cast<uint64_t>(hclen);
  for (int i = 0; i < cl_count; ++i) {
    header_bits += cl_len[cl[i].symbol] + cl[i].extra_bits;
  }
  if (header_bits + data_bits >= (n + 5) * 8) {
    out->Stored(data, n, false);
    return;
  }
  uint32_t cl_code[19] = {0};
  CanonicalCodes(cl_len, 19, cl_code);
  uint32_t code[257] = {0};
  CanonicalCodes(len, 257, code);
  out->Put(2 << 1, 3);  // not final, dynamic Huffman
  out->Put(0, 5);       // 257 literal/length codes
  out->Put(0, 5);       // 1 distance code (unused)
  out->Put(static_cast<uint32_t>(hclen - 4), 4);
  for (int i = 0; i < hclen; ++i) out->Put(cl_len[kOrder[i]], 3);
  for (int i = 0; i < cl_count; ++i) {
    out->Put(cl_code[cl[i].symbol], cl_len[cl[i].symbol]);
    if (cl[i].extra_bits > 0) out->Put(cl[i].extra, cl[i].extra_bits);
  }
  // Pack each symbol's code and length in one word.
  uint32_t table[256];
  for (int b = 0; b < 256; ++b) table[b] = (code[b] << 5) | len[b];
  out->Symbols(data, n, table);
  out->Put(code[256], len[256]);
}

size_t DeflateParts(std::span<const std::string_view> parts,
                    std::string_view stored, char* out) {
  DeflateBits bits(out);
  constexpr size_t kBlock = 65535;
  for (std::string_view p : parts) {
    const auto* d = reinterpret_cast<const uint8_t*>(p.data());
    for (size_t off = 0; off < p.size(); off += kBlock) {
      HuffmanBlock(d + off, std::min(kBlock, p.size() - off), &bits);
    }
  }
  const auto* d = reinterpret_cast<const uint8_t*>(stored.data());
  for (size_t off = 0; off < stored.size(); off += kBlock) {
    bits.Stored(d + off, std::min(kBlock, stored.size() - off), false);
  }
  bits.Stored(nullptr, 0, /*final=*/true);
  return bits.size();
}

// DeflateParts compiled for each instruction set of cpu_dispatch.h.
PODSCOPE_TARGET_V3 size_t
DeflatePartsV3(std::span<const std::string_view> parts, std::string_view stored,
               char* out) {
  return DeflateParts(parts, stored, out);
}
PODSCOPE_TARGET_BASELINE size_t
DeflatePartsBaseline(std::span<const std::string_view> parts,
                     std::string_view stored, char* out) {
  return DeflateParts(parts, stored, out);
}

}  // namespace

// A raw deflate stream of `parts` (Huffman-coded, one table per block of
// at most 64 KiB of a part) then `stored` (stored blocks). Returns its
// size; `out` has room for DeflatedBound.
size_t DeflateHuffmanParts(std::span<const std::string_view> parts,
                           std::string_view stored, char* out) {
  return base::UseX86V3() ? DeflatePartsV3(parts, stored, out)
                          : DeflatePartsBaseline(parts, stored, out);
}

size_t DeflatedBound(size_t bytes, size_t pieces) {
  // Stored blocks: 5 bytes each (and up to 7 bits of padding); Huffman
  // blocks are only used when smaller. Plus slack for the 8-byte stores.
  return bytes + 6 * (bytes / 65535 + pieces + 2) + 16;
}

}  // namespace podscope::trace_format
