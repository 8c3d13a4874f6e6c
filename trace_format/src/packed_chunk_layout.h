// Internal to trace_format: the packed chunk layout (formats 1.1 and 1.2)
// as both its encoder (packed_chunk_encoder.cc) and its decoder
// (packed_chunk_decoder.cc) see it: the sections, the prediction both sides
// keep in step, and the byte and bit streams. docs/trace-format.md
// ("Packed chunks") is the specification; these files and it must agree
// byte for byte.
//
// Everything here is inline and small: it runs in the hot loops of both
// sides, which are compiled once per instruction set (cpu_dispatch.h).
#ifndef PODSCOPE_TRACE_FORMAT_SRC_PACKED_CHUNK_LAYOUT_H_
#define PODSCOPE_TRACE_FORMAT_SRC_PACKED_CHUNK_LAYOUT_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "podscope/base/coding.h"
#include "podscope/trace_format/chunk_codec.h"

namespace podscope::trace_format::packed_chunk {

enum Section : int {
  kTracksSection = 0,
  kSliceSection,
  kNameSection,
  kCloseSection,
  kMiscSection,
  kArgIndexSection,
  kArgValueSection,
  kBitsSection,
  kSectionCount,
};

inline constexpr uint32_t kFlatSlices = 1;
inline constexpr uint32_t kIntegralCounters = 2;
// A nested slice's byte: bit 0 is set when its name was not predicted,
// bits 1-2 hold the pops code (0: as predicted, else pops + 1; 3 and more
// continue in the misc section), bits 3-7 the open delta's bucket symbol
// (31 and more continue in the misc section).
inline constexpr uint32_t kPopsField = 3;
inline constexpr uint32_t kOpenField = 31;
inline constexpr uint32_t kCloseField = 15;
inline constexpr uint32_t kNoName = ~0u;

// base's coding, under the short names this file uses.
inline constexpr uint64_t ZigZag(int64_t v) { return base::ZigZagEncode64(v); }
inline constexpr int64_t UnZigZag(uint64_t v) {
  return base::ZigZagDecode64(v);
}

// The bit length of v: 0 for 0, else 1 + floor(log2 v).
inline uint32_t BitLength(uint64_t v) {
  return v == 0 ? 0 : 64 - std::countl_zero(v);
}

// A time delta is coded as a bucket (predicted, see below) and the bits
// below its leading one that the bucket does not give. Deltas below
// 2^exact_bits have a bucket each (the delta itself: the timing noise of
// back-to-back scopes is a nanosecond or two, which an entropy coder then
// codes in about a bit instead of raw bits); a larger delta's bucket is
// its bit length shifted to follow them, and its bits below the leading
// one go raw to the bits section. Layout 1 (format 1.1) is the same with
// exact_bits = 1.
struct DeltaCoding {
  uint32_t exact_bits;
  constexpr uint32_t exact() const { return 1u << exact_bits; }
  constexpr uint32_t shift() const { return exact() - exact_bits - 1; }
  constexpr uint32_t max_bucket() const { return 64 + shift(); }
};
inline constexpr uint8_t kLayout11 = 1;  // format 1.1
inline constexpr DeltaCoding kCoding11{1};
inline constexpr DeltaCoding kCoding12{4};
static_assert(kPackedChunkLayout == 2, "the writer's layout is 1.2's");

// Prediction tables are direct-mapped, sized by the track's slice count so
// that small tracks stay cheap; collisions only cost compression.
inline constexpr uint32_t kMaxTableBits = 12;
inline uint32_t TableBits(size_t slices) {
  uint32_t bits = 6;
  while (bits < kMaxTableBits && (size_t{1} << bits) < 2 * slices) ++bits;
  return bits;
}
// Slices are predicted from their place in the call tree: a slice's path
// hashes its parent's path with its name; its context hashes the parent's
// path with the name of the sibling closed just before it (kNoName for a
// first child). The context predicts the name; the context and name
// predict the size of the open delta, the path that of the close delta. A loop
// that runs the same call trees again and again repeats contexts, names and
// timings.
inline constexpr uint64_t kRootPath = 0;
// Mix in two steps, a product and its fold, for a reader that wants the
// product's high bits before the fold is done.
inline uint64_t MixProduct(uint64_t a, uint32_t b) {
  return (a ^ (uint64_t{b} + 0x632BE59BD9B4E019ull)) * 0x9E3779B97F4A7C15ull;
}
inline uint64_t MixFold(uint64_t x) { return x ^ (x >> 32); }
inline uint64_t Mix(uint64_t a, uint32_t b) {
  return MixFold(MixProduct(a, b));
}
// A table slot. Layout 1 mixed the hash once more; Mix's high bits are
// already the high bits of a product, so layout 2 takes them as they are
// (one multiply less on the path from a slice to the next).
template <uint32_t kExactBits>
uint32_t Slot(uint64_t hash, uint32_t bits) {
  if constexpr (kExactBits == 1) {
    return static_cast<uint32_t>((hash * 0xD6E8FEB86659FD93ull) >> (64 - bits));
  } else {
    return static_cast<uint32_t>(hash >> (64 - bits));
  }
}

// A delta's bucket is predicted by a running average of the buckets seen
// in the same place (fixed point, 4 fractional bits), or by the previous
// delta of its kind in a place not seen yet.
inline constexpr uint16_t kUnknownBucket = 0xFFFF;

// The prediction tables of one track's slices. The encoder and the decoder
// start every track from this same state, so both reset it here. Each table
// has room for the largest track, so that every table lies at a constant
// offset from the first: a loop short of registers reads them all through
// one pointer.
class SlicePredictor {
 public:
  struct Tables {
    uint32_t names[size_t{1} << kMaxTableBits];
    // uint16_t, not uint8_t: a store through a char type may alias anything.
    uint16_t opens[size_t{1} << kMaxTableBits];
    uint16_t closes[size_t{1} << kMaxTableBits];
    uint16_t pops[size_t{1} << kMaxTableBits];
  };
  // Clears the first 2^bits entries of each table for a track of
  // `slices`; returns the bits of a slot index.
  uint32_t Reset(size_t slices) {
    if (tables_ == nullptr) tables_ = std::make_unique<Tables>();
    const uint32_t bits = TableBits(slices);
    const size_t size = size_t{1} << bits;
    std::fill_n(tables_->names, size, 0u);
    std::fill_n(tables_->opens, size, kUnknownBucket);
    std::fill_n(tables_->closes, size, kUnknownBucket);
    std::fill_n(tables_->pops, size, uint16_t{0});
    return bits;
  }
  // After a Reset.
  Tables* tables() { return tables_.get(); }

 private:
  std::unique_ptr<Tables> tables_;
};
inline uint32_t PredictBucket(uint16_t average, uint32_t last) {
  return average == kUnknownBucket ? last : (average + 8u) >> 4;
}
inline void LearnBucket(uint16_t* average, uint32_t bucket) {
  const int32_t target = static_cast<int32_t>(bucket << 4);
  if (*average == kUnknownBucket) {
    *average = static_cast<uint16_t>(target);
  } else {
    // (target - average) / 4, rounded toward zero as C++ division rounds,
    // in shifts: a compiler may otherwise leave a real division in a loop
    // it takes for cold (the reader's, at 20 cycles a slice).
    const int32_t d = target - *average;
    *average = static_cast<uint16_t>(*average + ((d + ((d >> 31) & 3)) >> 2));
  }
}

// ------------------------------------------------------------- byte streams

// A growable byte buffer written through a raw pointer: callers Reserve the
// worst case, then append without checks.
class Bytes {
 public:
  void Reserve(size_t more) {
    if (size_ + more > data_.size()) {
      data_.resize(std::max(data_.size() * 2, size_ + more + 64));
    }
  }
  void Byte(uint8_t b) { data_[size_++] = static_cast<char>(b); }
  void Varint(uint64_t v) {
    size_ = static_cast<size_t>(base::EncodeVarint64(data_.data() + size_, v) -
                                data_.data());
  }
  void Raw(const void* p, size_t n) {
    std::memcpy(data_.data() + size_, p, n);
    size_ += n;
  }
  // Checked forms, for the rare columns.
  void PutVarint(uint64_t v) {
    Reserve(10);
    Varint(v);
  }
  void PutByte(uint8_t b) {
    Reserve(1);
    Byte(b);
  }
  void PutDouble(double d) {
    Reserve(8);
    Raw(&d, 8);  // little-endian on every supported target
  }
  size_t size() const { return size_; }
  void Truncate(size_t n) { size_ = n; }
  void Clear() { size_ = 0; }
  std::string_view view() const { return {data_.data(), size_}; }
  char* end() { return data_.data() + size_; }
  uint8_t* tail() { return reinterpret_cast<uint8_t*>(data_.data()) + size_; }
  void Advance(size_t n) { size_ += n; }

 private:
  std::string data_;
  size_t size_ = 0;
};

// Little-endian bit stream, least significant bit first.
class BitWriter {
 public:
  explicit BitWriter(Bytes* out) : out_(out) {}
  // The caller has reserved (bits / 8 + 8) bytes.
  void Put(uint64_t v, uint32_t n) {
    if (n > 56) {
      Put(v & 0xFFFFFFFFu, 32);
      v >>= 32;
      n -= 32;
    }
    acc_ |= v << bits_;
    bits_ += n;
    std::memcpy(out_->end(), &acc_, 8);
    out_->Advance(bits_ >> 3);
    acc_ >>= bits_ & ~7u;  // bits_ < 64
    bits_ &= 7;
  }
  void Finish() {
    if (bits_ > 0) {
      out_->PutByte(static_cast<uint8_t>(acc_));
      acc_ = 0;
      bits_ = 0;
    }
  }
  struct State {
    size_t size;
    uint64_t acc;
    uint32_t bits;
  };
  State Save() const { return {out_->size(), acc_, bits_}; }
  void Restore(const State& s) {
    out_->Truncate(s.size);
    acc_ = s.acc;
    bits_ = s.bits;
  }

 private:
  Bytes* out_;
  uint64_t acc_ = 0;
  uint32_t bits_ = 0;
};

// A bounded cursor over one section.
struct Cursor {
  const uint8_t* p = nullptr;
  const uint8_t* end = nullptr;
  size_t left() const { return static_cast<size_t>(end - p); }
  bool Varint(uint64_t* v) {
    const uint8_t* next = base::DecodeVarint64(p, end, v);
    if (next == nullptr) return false;
    p = next;
    return true;
  }
  bool Varint32(uint32_t* v) {
    const uint8_t* next = base::DecodeVarint32(p, end, v);
    if (next == nullptr) return false;
    p = next;
    return true;
  }
  bool Byte(uint8_t* b) {
    if (p == end) return false;
    *b = *p++;
    return true;
  }
  bool Double(double* d) {
    if (left() < 8) return false;
    std::memcpy(d, p, 8);
    p += 8;
    return true;
  }
};

class BitReader {
 public:
  BitReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  // n <= 56. Reading past the end yields zeros; overrun() says so.
  uint64_t Get(uint32_t n) {
    const size_t byte = pos_ >> 3;
    uint64_t w;
    if (byte + 8 <= size_) {
      std::memcpy(&w, data_ + byte, 8);
    } else {
      w = 0;
      for (size_t i = byte; i < size_ && i < byte + 8; ++i) {
        w |= uint64_t{data_[i]} << (8 * (i - byte));
      }
    }
    const uint64_t v = (w >> (pos_ & 7)) & ((uint64_t{1} << n) - 1);
    pos_ += n;
    return v;
  }
  uint64_t GetWide(uint32_t n) {
    if (n <= 56) return Get(n);
    const uint64_t low = Get(32);
    return low | (Get(n - 32) << 32);
  }
  bool overrun() const { return pos_ > 8 * uint64_t{size_}; }

 private:
  const uint8_t* data_;
  size_t size_;
  uint64_t pos_ = 0;
};

}  // namespace podscope::trace_format::packed_chunk

#endif  // PODSCOPE_TRACE_FORMAT_SRC_PACKED_CHUNK_LAYOUT_H_
