// Byte coding and wrapping arithmetic shared by every encoder and decoder.
//
// Contract:
// - Fixed-width integers are little-endian, whatever the host.
// - Varints are LEB128 (7 bits a byte, least significant group first, high
//   bit set on every byte but the last), as protobuf writes them. A decoder
//   accepts at most kMaxVarint64Bytes bytes; bits past the 64th are dropped.
//   Decoders are bounded: they never read at or past `limit` and report
//   truncation by returning nullptr / false, never by undefined behaviour.
// - ZigZag maps signed to unsigned so that small magnitudes stay small.
// - Wrapping arithmetic is two's-complement modulo 2^64: defined for every
//   input, so that values read from damaged files cannot cause undefined
//   behaviour, and a delta made with WrappingSub is undone exactly by
//   WrappingAdd.
#ifndef PODSCOPE_BASE_CODING_H_
#define PODSCOPE_BASE_CODING_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace podscope::base {

inline constexpr size_t kMaxVarint64Bytes = 10;
inline constexpr size_t kMaxVarint32Bytes = 5;

// ------------------------------------------------------------ fixed width

inline void EncodeFixed16(char* dst, uint16_t v) {
  dst[0] = static_cast<char>(v);
  dst[1] = static_cast<char>(v >> 8);
}
inline void EncodeFixed32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}
inline void EncodeFixed64(char* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}

inline uint16_t DecodeFixed16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) |
                               (static_cast<uint8_t>(p[1]) << 8));
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

inline void PutFixed16(std::string* dst, uint16_t v) {
  char buf[2];
  EncodeFixed16(buf, v);
  dst->append(buf, 2);
}
inline void PutFixed32(std::string* dst, uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  dst->append(buf, 4);
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  dst->append(buf, 8);
}

// A double's IEEE-754 bits, little-endian (8 bytes).
inline void EncodeDouble(char* dst, double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  EncodeFixed64(dst, bits);
}
inline double DecodeDouble(const char* p) {
  const uint64_t bits = DecodeFixed64(p);
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

// ------------------------------------------------------------------ varints

// The number of bytes EncodeVarint64 writes for v (1 to 10).
inline size_t VarintLength(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Writes v at dst (room for kMaxVarint64Bytes) and returns the byte after.
inline char* EncodeVarint64(char* dst, uint64_t v) {
  while (v >= 0x80) {
    *dst++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *dst++ = static_cast<char>(v);
  return dst;
}

inline void PutVarint64(std::string* dst, uint64_t v) {
  char buf[kMaxVarint64Bytes];
  dst->append(buf, static_cast<size_t>(EncodeVarint64(buf, v) - buf));
}

// Reads a varint from [p, limit). Returns the byte after it, or nullptr when
// the bytes end first or the varint runs longer than kMaxVarint64Bytes.
inline const uint8_t* DecodeVarint64(const uint8_t* p, const uint8_t* limit,
                                     uint64_t* v) {
  uint64_t r = 0;
  for (size_t i = 0; i < kMaxVarint64Bytes; ++i) {
    if (p == limit) return nullptr;
    const uint8_t b = *p++;
    r |= static_cast<uint64_t>(b & 0x7f) << (7 * i);  // 7 * i <= 63
    if (b < 0x80) {
      *v = r;
      return p;
    }
  }
  return nullptr;
}
inline const char* DecodeVarint64(const char* p, const char* limit,
                                  uint64_t* v) {
  return reinterpret_cast<const char*>(
      DecodeVarint64(reinterpret_cast<const uint8_t*>(p),
                     reinterpret_cast<const uint8_t*>(limit), v));
}

// As DecodeVarint64, and also nullptr when the value exceeds 32 bits.
inline const uint8_t* DecodeVarint32(const uint8_t* p, const uint8_t* limit,
                                     uint32_t* v) {
  uint64_t r;
  p = DecodeVarint64(p, limit, &r);
  if (p == nullptr || r > 0xFFFFFFFFu) return nullptr;
  *v = static_cast<uint32_t>(r);
  return p;
}

// Reads a varint from the front of *input and removes it; false (input
// unchanged) when it is truncated or too long.
inline bool GetVarint64(std::string_view* input, uint64_t* v) {
  const char* p = input->data();
  const char* end = DecodeVarint64(p, p + input->size(), v);
  if (end == nullptr) return false;
  input->remove_prefix(static_cast<size_t>(end - p));
  return true;
}
inline bool GetVarint32(std::string_view* input, uint32_t* v) {
  uint64_t r;
  std::string_view rest = *input;
  if (!GetVarint64(&rest, &r) || r > 0xFFFFFFFFu) return false;
  *v = static_cast<uint32_t>(r);
  *input = rest;
  return true;
}

// ------------------------------------------------------------------- zigzag

inline constexpr uint64_t ZigZagEncode64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline constexpr int64_t ZigZagDecode64(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

// ------------------------------------------------------- wrapping arithmetic

// a + b and a - b modulo 2^64.
inline constexpr int64_t WrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
inline constexpr int64_t WrappingSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
// base plus a delta read as unsigned (a decoded varint), modulo 2^64.
inline constexpr int64_t WrappingAddDelta(int64_t base, uint64_t delta) {
  return static_cast<int64_t>(static_cast<uint64_t>(base) + delta);
}

// |a - b|, exact for every pair (it fits in 64 unsigned bits).
inline constexpr uint64_t AbsDifference(int64_t a, int64_t b) {
  return a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
               : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
}

// v rounded to the nearest int64, saturating: beyond about +-9.2e18 gives
// INT64_MAX / INT64_MIN, NaN gives 0.
inline int64_t SaturatingRound(double v) {
  if (!(v > -9.2e18)) return v != v ? 0 : INT64_MIN;
  if (v > 9.2e18) return INT64_MAX;
  return static_cast<int64_t>(std::llround(v));
}

// ---------------------------------------------------------- integral values

// True when `v` is a whole number that round-trips through int64_t exactly
// and is not -0.0 (whose sign an integer would lose). Magnitudes from 9e15
// on are refused, below 2^53, where every integer is still a double.
inline bool IsIntegral(double v) {
  if (!(std::abs(v) < 9.0e15) || v != std::trunc(v)) return false;
  return !(v == 0 && std::signbit(v));
}

// True when IsIntegral holds for proj(x) of every x in `range`; true for an
// empty range (no value needs a double). Encoders that flag "integral"
// only when there is a value to flag check emptiness themselves.
template <typename Range, typename Proj>
bool AllIntegral(const Range& range, Proj proj) {
  for (const auto& x : range) {
    if (!IsIntegral(static_cast<double>(proj(x)))) return false;
  }
  return true;
}
template <typename Range>
bool AllIntegral(const Range& range) {
  return AllIntegral(range, [](double v) { return v; });
}

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_CODING_H_
