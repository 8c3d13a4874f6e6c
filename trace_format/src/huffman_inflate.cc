// An inflater for Huffman-only deflate streams (RFC 1951 stored and dynamic
// blocks, literals only), the streams DeflateHuffmanParts writes: zlib's
// inflate spends most of its time on the match machinery such streams
// never use. Strict by design: whatever is not such a stream, or is one
// zlib would refuse, returns false and goes to zlib.
#include "huffman_inflate.h"

#include <cstring>

#include "podscope/base/cpu_dispatch.h"

namespace podscope::trace_format {
namespace {

constexpr uint32_t kMaxCodeBits = 15;
// Codes up to this long are read with one table lookup; longer ones (rare
// symbols) bit by bit.
constexpr uint32_t kTableBits = 10;

// Little-endian bits, least significant first. Past the end of the input
// it reads zeros and counts them: overrun() says whether any was used.
class BitIn {
 public:
  BitIn(const uint8_t* in, size_t size) : start_(in), p_(in), end_(in + size) {}

  // At least 56 bits in the buffer. Bits above count_ may already hold
  // the next input bits; a later refill ORs in the same ones.
  void Refill() {
    if (end_ - p_ >= 8) {
      uint64_t w;
      std::memcpy(&w, p_, 8);
      buf_ |= w << count_;
      p_ += (63 - count_) >> 3;
      count_ |= 56;
      return;
    }
    while (count_ <= 56) {
      if (p_ < end_) {
        buf_ |= uint64_t{*p_++} << count_;
      } else {
        ++zeros_;
      }
      count_ += 8;
    }
  }
  uint32_t available() const { return count_; }
  uint32_t Peek(uint32_t n) const {
    return static_cast<uint32_t>(buf_) & ((1u << n) - 1);
  }
  void Drop(uint32_t n) {
    buf_ >>= n;
    count_ -= n;
  }
  uint32_t Bits(uint32_t n) {  // n <= 16
    if (count_ < n) Refill();
    const uint32_t v = Peek(n);
    Drop(n);
    return v;
  }
  // Whether the bits used so far went past the input's end.
  bool overrun() const { return uint64_t{zeros_} * 8 > count_; }
  // Skips to the next byte boundary; returns the offset of that byte.
  size_t AlignToByte() {
    Drop(count_ & 7);
    return static_cast<size_t>(p_ - start_) + zeros_ - count_ / 8;
  }
  void Seek(size_t offset) {
    p_ = start_ + offset;
    buf_ = 0;
    count_ = 0;
    zeros_ = 0;
  }

 private:
  const uint8_t* start_;
  const uint8_t* p_;
  const uint8_t* end_;
  uint64_t buf_ = 0;
  uint32_t count_ = 0;
  uint32_t zeros_ = 0;
};

class Huffman {
 public:
  // Builds the canonical code of lengths[0, n) (n <= 288, lengths <= 15).
  // False unless the code is complete, as zlib requires of a code that
  // may be used.
  bool Build(const uint8_t* lengths, uint32_t n) {
    std::memset(count_, 0, sizeof(count_));
    for (uint32_t s = 0; s < n; ++s) ++count_[lengths[s]];
    count_[0] = 0;
    int32_t left = 1;
    for (uint32_t len = 1; len <= kMaxCodeBits; ++len) {
      left = 2 * left - count_[len];
      if (left < 0) return false;  // over-subscribed
    }
    if (left != 0) return false;  // incomplete
    uint16_t offset[kMaxCodeBits + 2] = {0};
    for (uint32_t len = 1; len <= kMaxCodeBits; ++len) {
      offset[len + 1] = static_cast<uint16_t>(offset[len] + count_[len]);
    }
    for (uint32_t s = 0; s < n; ++s) {
      if (lengths[s] != 0)
        symbol_[offset[lengths[s]]++] = static_cast<uint16_t>(s);
    }
    // The table: every index whose low bits are a short code's (bit-
    // reversed, as the stream sends codes most significant bit first).
    std::memset(table_, 0, sizeof(table_));
    uint32_t code = 0, k = 0;
    for (uint32_t len = 1; len <= kTableBits; ++len) {
      for (uint32_t i = 0; i < count_[len]; ++i, ++k, ++code) {
        uint32_t reversed = 0;
        for (uint32_t b = 0; b < len; ++b)
          reversed |= ((code >> b) & 1) << (len - 1 - b);
        const auto entry = static_cast<uint16_t>((symbol_[k] << 6) | len);
        for (uint32_t j = reversed; j < (1u << kTableBits); j += 1u << len) {
          table_[j] = entry;
        }
      }
      code <<= 1;
    }
    return true;
  }

  // The table entry of the next kTableBits bits: symbol << 6 | length (the
  // low six bits, as a shift takes its count), or
  // 0 for a longer code.
  uint16_t entry(uint32_t bits) const { return table_[bits]; }

  // The next symbol; the input holds at least kMaxCodeBits bits.
  uint32_t Decode(BitIn* in) const {
    const uint32_t entry = table_[in->Peek(kTableBits)];
    if (entry != 0) [[likely]] {
      in->Drop(entry & 63);
      return entry >> 6;
    }
    return DecodeLong(in);
  }

 private:
  // Bit by bit, counting codes of each length (a complete code always
  // ends in a symbol within kMaxCodeBits bits).
  uint32_t DecodeLong(BitIn* in) const {
    const uint32_t bits = in->Peek(kMaxCodeBits);
    int32_t code = 0, first = 0, index = 0;
    for (uint32_t len = 1; len <= kMaxCodeBits; ++len) {
      code |= static_cast<int32_t>((bits >> (len - 1)) & 1);
      const int32_t count = count_[len];
      if (code - count < first) {
        in->Drop(len);
        return symbol_[index + (code - first)];
      }
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
    return 0xFFFF;  // unreachable for a complete code
  }

  uint16_t table_[1u << kTableBits];  // symbol << 6 | length; 0: longer
  uint16_t count_[kMaxCodeBits + 1];
  uint16_t symbol_[288];
};

// Two literals at once where both codes fit in kTableBits bits: the codes
// of packed sections are mostly short, and a lookup's latency, not its
// work, bounds the loop.
class LiteralPairs {
 public:
  void Build(const Huffman& code) {
    for (uint32_t bits = 0; bits < (1u << kTableBits); ++bits) {
      pairs_[bits] = 0;
      const uint32_t first = code.entry(bits);
      const uint32_t len1 = first & 63;
      if (first == 0 || (first >> 6) >= 256) continue;
      // The bits after the first code; those past kTableBits read as 0, so
      // the second code counts only if it ends within kTableBits.
      const uint32_t second = code.entry(bits >> len1);
      const uint32_t len2 = second & 63;
      if (second == 0 || (second >> 6) >= 256 || len1 + len2 > kTableBits) {
        continue;
      }
      pairs_[bits] =
          ((second >> 6) << 16) | ((first >> 6) << 8) | (len1 + len2);
    }
  }
  // second << 16 | first << 8 | bits used, or 0. The bits used are the
  // low bits, so the shift that drops them needs no mask: one step less
  // between one lookup and the next.
  uint32_t entry(uint32_t bits) const { return pairs_[bits]; }

 private:
  uint32_t pairs_[1u << kTableBits];
};

// A dynamic block's header: the literal/length code in `literals`. False
// for anything zlib would refuse, and for codes this reader does not take.
bool ReadDynamicHeader(BitIn* in, Huffman* literals) {
  const uint32_t hlit = in->Bits(5) + 257;
  const uint32_t hdist = in->Bits(5) + 1;
  const uint32_t hclen = in->Bits(4) + 4;
  if (hlit > 286 || hdist > 30) return false;
  static constexpr uint8_t kOrder[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                         11, 4,  12, 3, 13, 2, 14, 1, 15};
  uint8_t cl_lengths[19] = {0};
  for (uint32_t i = 0; i < hclen; ++i) {
    cl_lengths[kOrder[i]] = static_cast<uint8_t>(in->Bits(3));
  }
  Huffman cl;
  if (!cl.Build(cl_lengths, 19)) return false;
  uint8_t lengths[286 + 30];
  const uint32_t total = hlit + hdist;
  for (uint32_t i = 0; i < total;) {
    if (in->available() < kMaxCodeBits + 7) in->Refill();
    const uint32_t sym = cl.Decode(in);
    if (sym < 16) {
      lengths[i++] = static_cast<uint8_t>(sym);
      continue;
    }
    uint8_t value = 0;
    uint32_t repeat;
    if (sym == 16) {
      if (i == 0) return false;
      value = lengths[i - 1];
      repeat = 3 + in->Bits(2);
    } else if (sym == 17) {
      repeat = 3 + in->Bits(3);
    } else {
      repeat = 11 + in->Bits(7);
    }
    if (repeat > total - i) return false;
    std::memset(lengths + i, value, repeat);
    i += repeat;
  }
  if (in->overrun() || lengths[256] == 0) return false;
  if (!literals->Build(lengths, hlit)) return false;
  // Distances are never used here, but zlib checks their code: none at
  // all, or a complete one.
  bool any_distance = false;
  for (uint32_t i = hlit; i < total; ++i) any_distance |= lengths[i] != 0;
  if (any_distance) {
    Huffman distances;
    if (!distances.Build(lengths + hlit, hdist)) return false;
  }
  return true;
}

bool Inflate(const uint8_t* in_data, size_t in_size, uint8_t* out,
             size_t size) {
  BitIn in(in_data, in_size);
  uint8_t* o = out;
  uint8_t* const out_end = out + size;
  Huffman literals;
  LiteralPairs pairs;
  bool final = false;
  while (!final) {
    if (in.overrun()) return false;
    final = in.Bits(1) != 0;
    const uint32_t type = in.Bits(2);
    if (type == 0) {
      const size_t at = in.AlignToByte();
      if (at > in_size || in_size - at < 4) return false;
      const uint32_t len = in_data[at] | (uint32_t{in_data[at + 1]} << 8);
      const uint32_t nlen = in_data[at + 2] | (uint32_t{in_data[at + 3]} << 8);
      if (len != (~nlen & 0xFFFF)) return false;
      if (in_size - at - 4 < len || static_cast<size_t>(out_end - o) < len) {
        return false;
      }
      if (len > 0) std::memcpy(o, in_data + at + 4, len);
      o += len;
      in.Seek(at + 4 + len);
      continue;
    }
    if (type != 2) return false;  // fixed codes (or invalid): zlib's
    if (!ReadDynamicHeader(&in, &literals)) return false;
    pairs.Build(literals);
    // Three steps of at most 15 bits per refill of at least 56; a step is
    // a pair of literals or one code.
    bool block_done = false;
    while (!block_done) {
      in.Refill();
      for (int step = 0; step < 3; ++step) {
        const uint32_t pair = pairs.entry(in.Peek(kTableBits));
        if (pair != 0 && out_end - o >= 2) [[likely]] {
          o[0] = static_cast<uint8_t>(pair >> 8);
          o[1] = static_cast<uint8_t>(pair >> 16);
          o += 2;
          in.Drop(pair & 63);
          continue;
        }
        const uint32_t sym = literals.Decode(&in);
        if (sym < 256 && o < out_end) {
          *o++ = static_cast<uint8_t>(sym);
          continue;
        }
        if (sym != 256) return false;  // a length code, or bytes too many
        block_done = true;
        break;
      }
    }
  }
  return !in.overrun() && o == out_end;
}

PODSCOPE_TARGET_V3 bool InflateV3(const uint8_t* in, size_t in_size,
                                  uint8_t* out, size_t size) {
  return Inflate(in, in_size, out, size);
}
PODSCOPE_TARGET_BASELINE bool InflateBaseline(const uint8_t* in, size_t in_size,
                                              uint8_t* out, size_t size) {
  return Inflate(in, in_size, out, size);
}

}  // namespace

bool InflateHuffmanLiterals(const uint8_t* in, size_t in_size, uint8_t* out,
                            size_t size) {
  return base::UseX86V3() ? InflateV3(in, in_size, out, size)
                          : InflateBaseline(in, in_size, out, size);
}

}  // namespace podscope::trace_format
