// The packed chunk layout (format 1.1): every track's events written
// straight into a few byte sections shaped for a fast entropy coder, and
// one section of raw bits. docs/trace-format.md ("Packed chunks") is the
// specification; this file and it must agree byte for byte.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "podscope/base/coding.h"
#include "podscope/base/cpu_dispatch.h"
#include "podscope/base/sorting.h"
#include "podscope/trace_format/chunk_codec.h"

namespace podscope::trace_format {
namespace {

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

constexpr uint32_t kFlatSlices = 1;
constexpr uint32_t kIntegralCounters = 2;
// A nested slice's byte: bit 0 is set when its name was not predicted,
// bits 1-2 hold the pops code (0: as predicted, else pops + 1; 3 and more
// continue in the misc section), bits 3-7 the open delta's bucket symbol
// (31 and more continue in the misc section).
constexpr uint32_t kPopsField = 3;
constexpr uint32_t kOpenField = 31;
constexpr uint32_t kCloseField = 15;
constexpr uint32_t kNoName = ~0u;

// base's coding, under the short names this file uses.
constexpr uint64_t ZigZag(int64_t v) { return base::ZigZagEncode64(v); }
constexpr int64_t UnZigZag(uint64_t v) { return base::ZigZagDecode64(v); }

// The bit length of v: 0 for 0, else 1 + floor(log2 v).
uint32_t BitLength(uint64_t v) { return v == 0 ? 0 : 64 - std::countl_zero(v); }

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
constexpr uint8_t kLayout11 = 1;  // format 1.1
constexpr DeltaCoding kCoding11{1};
constexpr DeltaCoding kCoding12{4};
static_assert(kPackedChunkLayout == 2, "the writer's layout is 1.2's");

// Prediction tables are direct-mapped, sized by the track's slice count so
// that small tracks stay cheap; collisions only cost compression.
constexpr uint32_t kMaxTableBits = 12;
uint32_t TableBits(size_t slices) {
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
constexpr uint64_t kRootPath = 0;
uint64_t Mix(uint64_t a, uint32_t b) {
  uint64_t x =
      (a ^ (uint64_t{b} + 0x632BE59BD9B4E019ull)) * 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 32);
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
constexpr uint16_t kUnknownBucket = 0xFFFF;

// The prediction tables of one track's slices. The encoder and the decoder
// start every track from this same state, so both reset it here.
struct SlicePredictor {
  std::vector<uint32_t> names;
  // uint16_t, not uint8_t: a store through a char type may alias anything.
  std::vector<uint16_t> opens, closes, pops;
  // Sizes and clears the tables for a track of `slices`; returns the bits
  // of a slot index.
  uint32_t Reset(size_t slices) {
    const uint32_t bits = TableBits(slices);
    const size_t size = size_t{1} << bits;
    names.assign(size, 0);
    opens.assign(size, kUnknownBucket);
    closes.assign(size, kUnknownBucket);
    pops.assign(size, 0);
    return bits;
  }
};
uint32_t PredictBucket(uint16_t average, uint32_t last) {
  return average == kUnknownBucket ? last : (average + 8u) >> 4;
}
void LearnBucket(uint16_t* average, uint32_t bucket) {
  const int32_t target = static_cast<int32_t>(bucket << 4);
  if (*average == kUnknownBucket) {
    *average = static_cast<uint16_t>(target);
  } else {
    *average = static_cast<uint16_t>(*average + (target - *average) / 4);
  }
}

// ------------------------------------------------------------------ writing

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

class Encoder {
 public:
  explicit Encoder(uint8_t layout)
      : layout_(layout), bits_(&sections_[kBitsSection]) {}

  void Track(const TrackEvents& e) {
    const auto& slices = e.slices;
    uint32_t flags = 0;
    if (!slices.empty() &&
        !(layout_ == kLayout11 ? Nested<kCoding11.exact_bits, false, 0>(
                                     slices.data(), slices.size())
          : TableBits(slices.size()) == kMaxTableBits
              ? Nested<kCoding12.exact_bits, false, kMaxTableBits>(
                    slices.data(), slices.size())
              : Nested<kCoding12.exact_bits, false, 0>(slices.data(),
                                                       slices.size()))) {
      flags |= kFlatSlices;
      Flat(slices);
    }
    Rest(e, flags);
  }

  bool TrackEndOrder(TrackEvents& e, std::pair<int64_t, int64_t>* range) {
    const std::vector<Slice>& slices = e.slices;
    const size_t n = slices.size();
    if (layout_ == kLayout11 || n < 2 || n >= kNoSlice) return false;
    auto by_time = [](const auto& a, const auto& b) {
      return a.ts_ns < b.ts_ns;
    };
    if (!std::is_sorted(e.instants.begin(), e.instants.end(), by_time) ||
        !std::is_sorted(e.counters.begin(), e.counters.end(), by_time) ||
        !std::is_sorted(e.samples.begin(), e.samples.end(), by_time)) {
      return false;
    }
    // Slices already in reader order (one scope over and over) are Add's.
    {
      size_t i = 1;
      while (i < n && !SliceBefore(slices[i], slices[i - 1])) ++i;
      if (i == n) return false;
    }
    const uint32_t first_root = LinkEndOrder(slices);
    if (!(TableBits(n) == kMaxTableBits
              ? Nested<kCoding12.exact_bits, true, kMaxTableBits>(slices.data(),
                                                                  n, first_root)
              : Nested<kCoding12.exact_bits, true, 0>(slices.data(), n,
                                                      first_root))) {
      return false;
    }
    // Nested left each slice's reader position in first_child_.
    const uint32_t* const position = first_child_.data();
    for (EventArgs& a : e.args) {
      if (a.kind == EventKind::kSlice && a.index < n) {
        a.index = position[a.index];
      }
    }
    for (FlowLink& l : e.flows) {
      if (l.kind == EventKind::kSlice && l.index < n) {
        l.index = position[l.index];
      }
    }
    auto by_event = [](const auto& a, const auto& b) {
      return std::make_pair(a.kind, a.index) < std::make_pair(b.kind, b.index);
    };
    // Renumbering only moves a slice's entries before those of the slices
    // nested in it: few pairs are out of order.
    base::StableSortNearlySorted(e.args, by_event);
    base::StableSortNearlySorted(e.flows, by_event);
    if (range != nullptr) {
      // The slices nest: the first root starts first, and the last slice
      // in end order is the last root, which ends last. The other columns
      // are sorted by time.
      int64_t lo = slices[first_root].start_ns, hi = slices[n - 1].end_ns();
      auto cover = [&](const auto& column) {
        if (column.empty()) return;
        lo = std::min(lo, column.front().ts_ns);
        hi = std::max(hi, column.back().ts_ns);
      };
      cover(e.instants);
      cover(e.counters);
      cover(e.samples);
      *range = {lo, hi};
    }
    Rest(e, 0);
    return true;
  }

  // The track's header and its columns after the slices.
  void Rest(const TrackEvents& e, uint32_t flags) {
    const auto& slices = e.slices;
    // The flag is only set when there are counters to flag.
    if (!e.counters.empty() && CountersAreIntegral(e.counters)) {
      flags |= kIntegralCounters;
    }
    Bytes& t = sections_[kTracksSection];
    t.PutVarint(e.track_id);
    t.PutVarint(flags);
    t.PutVarint(slices.size());
    t.PutVarint(e.instants.size());
    t.PutVarint(e.counters.size());
    t.PutVarint(e.samples.size());
    t.PutVarint(e.args.size());
    t.PutVarint(e.flows.size());
    Others(e, (flags & kIntegralCounters) != 0);
  }

  void Finish(std::vector<std::string_view>* compressible,
              std::string_view* bits) {
    bits_.Finish();
    Bytes& h = header_;
    h.Clear();
    h.PutByte(0);  // never the first byte of a protobuf Chunk
    h.PutByte(layout_);
    h.PutVarint(kSectionCount);
    for (int s = 0; s < kSectionCount; ++s) h.PutVarint(sections_[s].size());
    compressible->clear();
    compressible->push_back(h.view());
    for (int s = 0; s < kBitsSection; ++s) {
      if (sections_[s].size() > 0) compressible->push_back(sections_[s].view());
    }
    *bits = sections_[kBitsSection].view();
  }

  void Reset() {
    for (Bytes& s : sections_) s.Clear();
    bits_ = BitWriter(&sections_[kBitsSection]);
  }

 private:
  // SliceOrder: b comes before a in reader order.
  static bool SliceBefore(const Slice& b, const Slice& a) {
    return b.start_ns < a.start_ns ||
           (b.start_ns == a.start_ns && b.end_ns() > a.end_ns());
  }

  // Links slices in end order into their call trees: a slice's subtree is
  // the run of slices before it that it contains. Fills first_child_ and
  // next_sibling_ (kNoSlice for none); returns the first root.
  uint32_t LinkEndOrder(const std::vector<Slice>& slices) {
    const size_t n = slices.size();
    if (first_child_.size() < n) {
      first_child_.resize(n);
      next_sibling_.resize(n);
      roots_.resize(n);
    }
    uint32_t* const child = first_child_.data();
    uint32_t* const sibling = next_sibling_.data();
    Root* const r = roots_.data();
    size_t depth = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const int64_t start = slices[i].start_ns, end = slices[i].end_ns();
      // Adopt the finished subtrees this slice contains, last first.
      uint32_t next = kNoSlice;
      while (depth > 0 && r[depth - 1].start >= start &&
             r[depth - 1].end <= end) {
        const uint32_t adopted = r[--depth].index;
        sibling[adopted] = next;
        next = adopted;
      }
      child[i] = next;
      r[depth++] = {start, end, i};
    }
    uint32_t next = kNoSlice;
    while (depth > 0) {
      const uint32_t root = r[--depth].index;
      sibling[root] = next;
      next = root;
    }
    return next;
  }

  // Writes the nested form; false (with nothing written) when the slices
  // do not nest. The slices are in reader order, or with kEndOrder in end
  // order linked by LinkEndOrder from `first_root`, walked in reader order
  // (each one's reader position is left in first_child_); that walk fails
  // where the slices would not be in reader order (SliceOrder) or would
  // close otherwise than by their times, so that it writes what the
  // reader order would.
  // kTableBits, when not 0, is TableBits(n), known to the compiler (the
  // table slots' shifts are then constants).
  template <uint32_t kExactBits, bool kEndOrder, uint32_t kTableBits>
  bool Nested(const Slice* slices, size_t n, uint32_t first_root = 0) {
    Bytes& misc = sections_[kMiscSection];
    const size_t misc_mark = misc.size();
    sections_[kSliceSection].Reserve(n);
    sections_[kNameSection].Reserve(5 * n);
    sections_[kCloseSection].Reserve(n);
    sections_[kBitsSection].Reserve(16 * n + 16);
    // Raw pointers in locals: stores through a uint8_t pointer may alias
    // anything, which would make the compiler reload every member after
    // each byte. Nothing is committed until the slices prove to nest.
    uint8_t* const bytes_start = sections_[kSliceSection].tail();
    uint8_t* const names_start = sections_[kNameSection].tail();
    uint8_t* const closes_start = sections_[kCloseSection].tail();
    uint8_t* bp = bytes_start;
    uint8_t* np = names_start;
    uint8_t* cp = closes_start;
    BitWriter::State bw = bits_.Save();
    uint8_t* const bits_start = sections_[kBitsSection].tail();
    uint8_t* wp = bits_start;
    uint64_t acc = bw.acc;
    uint32_t nbits = bw.bits;

    const uint32_t reset_bits = predictor_.Reset(n);
    const uint32_t tb = kTableBits != 0 ? kTableBits : reset_bits;
    uint32_t* const name_table = predictor_.names.data();
    uint16_t* const open_table = predictor_.opens.data();
    uint16_t* const close_table = predictor_.closes.data();
    uint16_t* const pops_table = predictor_.pops.data();
    uint32_t last_open = 0, last_close = 0;
    uint64_t last_path = kRootPath;

    int64_t previous = 0;
    // The bucket symbol of `delta`; its low bits go to the bit section.
    constexpr DeltaCoding kCoding{kExactBits};
    auto code = [&](uint64_t delta, uint16_t * slot, uint32_t * last)
        __attribute__((always_inline)) {
      // Without branches on the delta's size: a delta below exact() puts
      // no bits.
      // (The length only matters for a wide delta, which is not 0.)
      const uint32_t length = BitLength(delta | 1);
      const bool wide = delta >= kCoding.exact();
      const uint32_t b =
          wide ? length + kCoding.shift() : static_cast<uint32_t>(delta);
      const uint32_t predicted = PredictBucket(*slot, *last);
      uint32_t nb = wide ? length - 1 : 0;
      uint64_t v = delta & ((uint64_t{1} << nb) - 1);
      if (nb > 56) [[unlikely]] {
        acc |= (v & 0xFFFFFFFFu) << nbits;
        nbits += 32;
        std::memcpy(wp, &acc, 8);
        wp += nbits >> 3;
        acc >>= nbits & ~7u;
        nbits &= 7;
        v >>= 32;
        nb -= 32;
      }
      acc |= v << nbits;
      nbits += nb;
      std::memcpy(wp, &acc, 8);
      wp += nbits >> 3;
      acc >>= nbits & ~7u;
      nbits &= 7;
      LearnBucket(slot, b);
      *last = b;
      return static_cast<uint32_t>(
          ZigZag(static_cast<int64_t>(b) - static_cast<int64_t>(predicted)));
    };
    auto varint = [](uint8_t*& p, uint64_t v) {
      while (v >= 0x80) {
        *p++ = static_cast<uint8_t>(v | 0x80);
        v >>= 7;
      }
      *p++ = static_cast<uint8_t>(v);
    };
    auto fail = [&] {
      misc.Truncate(misc_mark);
      return false;
    };
    // Close symbols are nibbles, two to a byte (low one first); 15 and
    // more continue in misc.
    // The byte being filled stays in a register and is stored whole each
    // time; the pointer moves on after its high nibble.
    uint32_t half = 0;
    uint32_t close_byte = 0;
    auto close = [&](uint32_t symbol) __attribute__((always_inline)) {
      const uint32_t nibble = std::min(symbol, kCloseField);
      if (symbol >= kCloseField) [[unlikely]] {
        misc.PutVarint(symbol - kCloseField);
      }
      close_byte = half ? close_byte | (nibble << 4) : nibble;
      *cp = static_cast<uint8_t>(close_byte);
      cp += half;
      half ^= 1;
    };
    // The stack of open slices, in locals; fields are read one by one (a
    // whole-struct copy of what was just stored stalls store forwarding).
    if (open_.size() < 64) open_.resize(64);
    OpenSlice* stack = open_.data();
    size_t stack_size = open_.size();
    size_t depth = 0;
    uint32_t* const first_children = first_child_.data();
    const uint32_t* const next_siblings = next_sibling_.data();
    uint32_t current = first_root;
    uint32_t next_pops = 0;
    int64_t last_start = 0, last_end = 0;
    for (size_t k = 0; k < n; ++k) {
      if (kEndOrder && current == kNoSlice) return fail();
      const Slice& s = slices[kEndOrder ? current : k];
      const int64_t end = s.end_ns();
      // Count the pops first: a pops code continued in misc comes before
      // the closes' own continuations there. A slice that closes after
      // this one starts makes it start before `previous` below: they
      // overlap without nesting.
      uint32_t pops = 0;
      if constexpr (kEndOrder) {
        // The walk closes the slices the times would: those on the stack
        // (each ending no later than the one below it) ending before this
        // one, no other. Its ancestors contain it.
        pops = next_pops;
        if (pops > 0 && stack[depth - pops].end >= end) return fail();
        if (k > 0 && s.start_ns == last_start && end > last_end) {
          return fail();  // not in SliceOrder
        }
        last_start = s.start_ns;
        last_end = end;
      } else {
        while (pops < depth && stack[depth - 1 - pops].end < end) ++pops;
      }
      // The slice opened last predicts how many slices close before the
      // next one opens.
      uint16_t& predicted_pops = pops_table[Slot<kExactBits>(~last_path, tb)];
      const uint32_t pops_code = pops == predicted_pops ? 0 : pops + 1;
      predicted_pops = static_cast<uint16_t>(std::min<uint32_t>(pops, 0xFFFF));
      if (pops_code >= kPopsField) misc.PutVarint(pops_code - kPopsField);
      uint32_t sibling = kNoName;
      for (uint32_t p = 0; p < pops; ++p) {
        const int64_t o_end = stack[depth - 1].end;
        close(code(static_cast<uint64_t>(o_end - previous),
                   &close_table[Slot<kExactBits>(stack[depth - 1].path, tb)],
                   &last_close));
        previous = o_end;
        sibling = stack[depth - 1].name;
        --depth;
      }
      if (s.start_ns < previous) return fail();
      const uint64_t parent = depth == 0 ? kRootPath : stack[depth - 1].path;
      const uint64_t context = Mix(parent, sibling);
      uint32_t& predicted = name_table[Slot<kExactBits>(context, tb)];
      const bool miss = predicted != s.name;
      if (miss) {
        varint(np, s.name);
        predicted = s.name;
      }
      const uint32_t open_code = code(
          static_cast<uint64_t>(s.start_ns - previous),
          &open_table[Slot<kExactBits>(Mix(context, s.name), tb)], &last_open);
      if (open_code >= kOpenField) misc.PutVarint(open_code - kOpenField);
      *bp++ =
          static_cast<uint8_t>((std::min(open_code, kOpenField) << 3) |
                               (std::min(pops_code, kPopsField) << 1) | miss);
      previous = s.start_ns;
      last_path = Mix(~parent, s.name);
      if (depth == stack_size) [[unlikely]] {
        open_.resize(2 * depth);
        stack = open_.data();
        stack_size = open_.size();
      }
      stack[depth].end = end;
      stack[depth].path = last_path;
      stack[depth].name = s.name;
      ++depth;
      if constexpr (kEndOrder) {
        // The next slice in reader order: this one's first child, else
        // the next sibling of it or of its nearest ancestor that has one,
        // after closing the slices on the way.
        stack[depth - 1].index = current;
        const uint32_t first = first_children[current];
        first_children[current] = static_cast<uint32_t>(k);
        if (first != kNoSlice) {
          current = first;
          next_pops = 0;
        } else {
          uint32_t p = 0;
          do {
            current = next_siblings[stack[depth - 1 - p].index];
            ++p;
          } while (current == kNoSlice && p < depth);
          next_pops = p;
        }
      }
    }
    while (depth > 0) {
      const int64_t o_end = stack[depth - 1].end;
      close(code(static_cast<uint64_t>(o_end - previous),
                 &close_table[Slot<kExactBits>(stack[depth - 1].path, tb)],
                 &last_close));
      previous = o_end;
      --depth;
    }
    if (half) ++cp;  // a track's closes end on a whole byte
    sections_[kSliceSection].Advance(static_cast<size_t>(bp - bytes_start));
    sections_[kNameSection].Advance(static_cast<size_t>(np - names_start));
    sections_[kCloseSection].Advance(static_cast<size_t>(cp - closes_start));
    sections_[kBitsSection].Advance(static_cast<size_t>(wp - bits_start));
    bits_.Restore({sections_[kBitsSection].size(), acc, nbits});
    return true;
  }

  void Flat(const std::vector<Slice>& slices) {
    Bytes& names = sections_[kNameSection];
    Bytes& misc = sections_[kMiscSection];
    names.Reserve(5 * slices.size());
    misc.Reserve(20 * slices.size());
    int64_t previous = 0;
    for (const Slice& s : slices) {
      names.Varint(s.name);
      misc.Varint(ZigZag(WrapDelta(s.start_ns, previous)));
      misc.Varint(static_cast<uint64_t>(s.duration_ns));
      previous = s.start_ns;
    }
  }

  static int64_t WrapDelta(int64_t a, int64_t b) {
    return base::WrappingSub(a, b);
  }

  void Others(const TrackEvents& e, bool integral) {
    Bytes& misc = sections_[kMiscSection];
    int64_t previous = 0;
    for (const Instant& i : e.instants) {
      misc.PutVarint(ZigZag(WrapDelta(i.ts_ns, previous)));
      misc.PutVarint(i.name);
      previous = i.ts_ns;
    }
    previous = 0;
    int64_t previous_value = 0;
    for (const CounterSample& c : e.counters) {
      misc.PutVarint(ZigZag(WrapDelta(c.ts_ns, previous)));
      previous = c.ts_ns;
      if (integral) {
        const int64_t v = static_cast<int64_t>(c.value);
        misc.PutVarint(ZigZag(WrapDelta(v, previous_value)));
        previous_value = v;
      } else {
        misc.PutDouble(c.value);
      }
    }
    previous = 0;
    for (const StackSample& s : e.samples) {
      misc.PutVarint(ZigZag(WrapDelta(s.ts_ns, previous)));
      misc.PutVarint(s.stack);
      previous = s.ts_ns;
    }
    Bytes& index = sections_[kArgIndexSection];
    Bytes& values = sections_[kArgValueSection];
    // Sorted by (kind, index): indices are deltas within a kind.
    int previous_kind = -1;
    uint32_t previous_index = 0;
    uint32_t previous_key = 0;
    for (const EventArgs& a : e.args) {
      const int kind = static_cast<int>(a.kind);
      index.PutVarint((uint64_t{a.args.size()} << 1) |
                      static_cast<uint64_t>(kind));
      const uint32_t base = kind == previous_kind ? previous_index : 0;
      index.PutVarint(a.index - base);
      previous_kind = kind;
      previous_index = a.index;
      for (const Arg& arg : a.args) {
        // (key delta, trailing zeros of an integer, type) in one varint:
        // sizes and addresses are multiples of powers of two.
        const uint64_t key = ZigZag(static_cast<int64_t>(arg.key) -
                                    static_cast<int64_t>(previous_key))
                             << 8;
        previous_key = arg.key;
        if (const auto* i = std::get_if<int64_t>(&arg.value)) {
          const uint32_t tz =
              *i == 0 ? 0 : std::countr_zero(static_cast<uint64_t>(*i));
          values.PutVarint(key | (tz << 2));
          values.PutVarint(ZigZag(*i >> tz));
        } else if (const auto* d = std::get_if<double>(&arg.value)) {
          values.PutVarint(key | 1);
          values.PutDouble(*d);
        } else {
          values.PutVarint(key | 2);
          values.PutVarint(std::get<StringId>(arg.value).id);
        }
      }
    }
    previous_kind = -1;
    previous_index = 0;
    for (const FlowLink& f : e.flows) {
      const int kind = static_cast<int>(f.kind);
      misc.PutVarint(static_cast<uint64_t>(kind));
      const uint32_t base = kind == previous_kind ? previous_index : 0;
      misc.PutVarint(f.index - base);
      misc.PutVarint(f.flow_id);
      misc.PutVarint(static_cast<uint64_t>(f.phase));
      previous_kind = kind;
      previous_index = f.index;
    }
  }

  struct OpenSlice {
    int64_t end;
    uint64_t path;
    uint32_t name;
    uint32_t index;  // in end order, for the walk from it
  };
  struct Root {
    int64_t start, end;
    uint32_t index;
  };
  static constexpr uint32_t kNoSlice = ~0u;

  const uint8_t layout_;
  Bytes sections_[kSectionCount];
  Bytes header_;
  BitWriter bits_;
  std::vector<OpenSlice> open_;
  SlicePredictor predictor_;
  std::vector<uint32_t> first_child_, next_sibling_;
  std::vector<Root> roots_;
};

// ------------------------------------------------------------------ reading

absl::Status Malformed(const char* what) {
  return absl::DataLossError(
      absl::StrFormat("packed chunk is malformed: %s", what));
}

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

int64_t AddDelta(int64_t start, uint64_t delta) {
  return base::WrappingAddDelta(start, delta);
}

struct TrackHeader {
  uint32_t track_id = 0, flags = 0;
  uint64_t slices = 0, instants = 0, counters = 0, samples = 0, args = 0,
           flows = 0;
};

class Decoder {
 public:
  absl::Status Decode(std::string_view bytes, std::vector<TrackEvents>* out) {
    Cursor c{reinterpret_cast<const uint8_t*>(bytes.data()),
             reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size()};
    uint8_t zero, layout;
    uint64_t count;
    if (!c.Byte(&zero) || zero != 0 || !c.Byte(&layout)) {
      return Malformed("no header");
    }
    if (layout != kPackedChunkLayout && layout != kLayout11) {
      return absl::DataLossError(absl::StrFormat(
          "packed chunk layout %d is not known to this reader", layout));
    }
    coding_ = layout == kLayout11 ? kCoding11 : kCoding12;
    if (!c.Varint(&count) || count < kSectionCount || count > 64) {
      return Malformed("section count");
    }
    uint64_t lengths[64];
    for (uint64_t s = 0; s < count; ++s) {
      if (!c.Varint(&lengths[s])) return Malformed("section lengths");
    }
    for (uint64_t s = 0; s < count; ++s) {
      if (lengths[s] > c.left()) return Malformed("a section overruns");
      if (s < kSectionCount) sec_[s] = {c.p, c.p + lengths[s]};
      c.p += lengths[s];
    }
    Cursor& t = sec_[kTracksSection];
    out->clear();
    BitReader bits(sec_[kBitsSection].p, sec_[kBitsSection].left());
    while (t.left() > 0) {
      TrackHeader h;
      if (!t.Varint32(&h.track_id) || !t.Varint32(&h.flags) ||
          !t.Varint(&h.slices) || !t.Varint(&h.instants) ||
          !t.Varint(&h.counters) || !t.Varint(&h.samples) ||
          !t.Varint(&h.args) || !t.Varint(&h.flows)) {
        return Malformed("track header");
      }
      TrackEvents& e = out->emplace_back();
      e.track_id = h.track_id;
      if (auto s = DecodeTrack(h, &bits, &e); !s.ok()) return s;
    }
    if (bits.overrun()) return Malformed("the bit section is too short");
    return absl::OkStatus();
  }

 private:
  absl::Status DecodeTrack(const TrackHeader& h, BitReader* bits,
                           TrackEvents* e) {
    const bool flat = (h.flags & kFlatSlices) != 0;
    // Every event takes at least one byte of some section: a count beyond
    // that is damage and must not make the reader allocate for it.
    const uint64_t misc = sec_[kMiscSection].left();
    if (h.slices > (flat ? sec_[kNameSection] : sec_[kSliceSection]).left() ||
        h.instants > misc || h.counters > misc || h.samples > misc ||
        h.flows > misc ||
        h.instants + h.counters + h.samples + h.flows > misc ||
        h.args > sec_[kArgIndexSection].left()) {
      return Malformed("event counts exceed the sections");
    }
    if (h.slices > 0) {
      absl::Status s = flat ? Flat(h.slices, e)
                       : coding_.exact_bits == kCoding11.exact_bits
                           ? Nested<kCoding11.exact_bits>(h.slices, bits, e)
                           : Nested<kCoding12.exact_bits>(h.slices, bits, e);
      if (!s.ok()) return s;
    }
    Cursor& m = sec_[kMiscSection];
    e->instants.resize(h.instants);
    int64_t time = 0;
    for (Instant& i : e->instants) {
      uint64_t d;
      if (!m.Varint(&d) || !m.Varint32(&i.name)) return Malformed("instants");
      time = AddDelta(time, static_cast<uint64_t>(UnZigZag(d)));
      i.ts_ns = time;
    }
    e->counters.resize(h.counters);
    time = 0;
    int64_t value = 0;
    const bool integral = (h.flags & kIntegralCounters) != 0;
    for (CounterSample& s : e->counters) {
      uint64_t d;
      if (!m.Varint(&d)) return Malformed("counters");
      time = AddDelta(time, static_cast<uint64_t>(UnZigZag(d)));
      s.ts_ns = time;
      if (integral) {
        if (!m.Varint(&d)) return Malformed("counters");
        value = AddDelta(value, static_cast<uint64_t>(UnZigZag(d)));
        s.value = static_cast<double>(value);
      } else if (!m.Double(&s.value)) {
        return Malformed("counters");
      }
    }
    e->samples.resize(h.samples);
    time = 0;
    for (StackSample& s : e->samples) {
      uint64_t d;
      if (!m.Varint(&d) || !m.Varint32(&s.stack)) return Malformed("samples");
      time = AddDelta(time, static_cast<uint64_t>(UnZigZag(d)));
      s.ts_ns = time;
    }
    auto valid = [&](uint64_t kind, uint64_t index) {
      if (kind == 0) return index < e->slices.size();
      if (kind == 1) return index < e->instants.size();
      return false;
    };
    Cursor& ai = sec_[kArgIndexSection];
    Cursor& av = sec_[kArgValueSection];
    e->args.resize(h.args);
    uint64_t previous_kind = ~uint64_t{0}, previous_index = 0;
    int64_t key = 0;
    for (EventArgs& a : e->args) {
      uint64_t head, delta;
      if (!ai.Varint(&head) || !ai.Varint(&delta)) {
        return Malformed("arguments");
      }
      const uint64_t kind = head & 1, n = head >> 1;
      if (n > av.left()) return Malformed("arguments");
      const uint64_t index =
          (kind == previous_kind ? previous_index : 0) + delta;
      if (!valid(kind, index)) {
        return Malformed("arguments refer to a missing event");
      }
      previous_kind = kind;
      previous_index = index;
      a.kind = static_cast<EventKind>(kind);
      a.index = static_cast<uint32_t>(index);
      a.args.resize(n);
      for (Arg& arg : a.args) {
        uint64_t head;
        if (!av.Varint(&head) || head >> 41 != 0) return Malformed("arguments");
        key += UnZigZag(head >> 8);
        if (key < 0 || key > 0xFFFFFFFFll) return Malformed("argument keys");
        arg.key = static_cast<uint32_t>(key);
        const uint32_t type = head & 3, tz = (head >> 2) & 63;
        if (type != 0 && tz != 0) return Malformed("argument values");
        bool ok = true;
        if (type == 0) {
          uint64_t v;
          ok = av.Varint(&v);
          arg.value =
              static_cast<int64_t>(static_cast<uint64_t>(UnZigZag(v)) << tz);
        } else if (type == 1) {
          double d = 0;
          ok = av.Double(&d);
          arg.value = d;
        } else if (type == 2) {
          uint32_t id = 0;
          ok = av.Varint32(&id);
          arg.value = StringId{id};
        } else {
          ok = false;
        }
        if (!ok) return Malformed("argument values");
      }
    }
    e->flows.resize(h.flows);
    previous_kind = ~uint64_t{0};
    previous_index = 0;
    for (FlowLink& f : e->flows) {
      uint64_t kind, delta, phase;
      if (!m.Varint(&kind) || !m.Varint(&delta) || !m.Varint(&f.flow_id) ||
          !m.Varint(&phase)) {
        return Malformed("flows");
      }
      const uint64_t index =
          (kind == previous_kind ? previous_index : 0) + delta;
      if (!valid(kind, index))
        return Malformed("a flow refers to a missing event");
      if (phase > 2) return Malformed("unknown flow phase");
      previous_kind = kind;
      previous_index = index;
      f.kind = static_cast<EventKind>(kind);
      f.index = static_cast<uint32_t>(index);
      f.phase = static_cast<FlowPhase>(phase);
    }
    return absl::OkStatus();
  }

  absl::Status Flat(uint64_t n, TrackEvents* e) {
    Cursor& names = sec_[kNameSection];
    Cursor& m = sec_[kMiscSection];
    e->slices.resize(n);
    int64_t time = 0;
    for (Slice& s : e->slices) {
      uint64_t d, duration;
      if (!names.Varint32(&s.name) || !m.Varint(&d) || !m.Varint(&duration)) {
        return Malformed("flat slices");
      }
      time = AddDelta(time, static_cast<uint64_t>(UnZigZag(d)));
      s.start_ns = time;
      s.duration_ns = static_cast<int64_t>(duration);
    }
    ComputeSliceDepths(&e->slices);
    return absl::OkStatus();
  }

  template <uint32_t kExactBits>
  absl::Status Nested(uint64_t n, BitReader* bit_reader, TrackEvents* e) {
    constexpr DeltaCoding kCoding{kExactBits};
    // Every section cursor lives in a local for the loop (the compiler
    // keeps them in registers) and is written back at the end.
    Cursor bytes = sec_[kSliceSection];
    Cursor names = sec_[kNameSection];
    Cursor closes = sec_[kCloseSection];
    Cursor misc = sec_[kMiscSection];
    BitReader bits = *bit_reader;
    // Each slice takes a byte of the slice section, half of one of the
    // close section.
    if (n > 2 * closes.left() || n > bytes.left()) {
      return Malformed("slice counts exceed the sections");
    }
    const uint32_t tb = predictor_.Reset(n);
    uint32_t* const name_table = predictor_.names.data();
    uint16_t* const open_table = predictor_.opens.data();
    uint16_t* const close_table = predictor_.closes.data();
    uint16_t* const pops_table = predictor_.pops.data();
    uint32_t last_open = 0, last_close = 0;
    uint64_t last_path = kRootPath;
    e->slices.resize(n);
    Slice* const slices = e->slices.data();
    // The stack of open slices, grown as deep nesting needs.
    if (open_.size() < 64) open_.resize(64);
    OpenSlice* stack = open_.data();
    size_t depth = 0;
    int64_t time = 0;
    bool bad = false;
    auto delta = [&](uint32_t symbol, uint16_t * slot, uint32_t * last)
        __attribute__((always_inline)) {
      const uint32_t predicted = PredictBucket(*slot, *last);
      const int64_t b = static_cast<int64_t>(predicted) + UnZigZag(symbol);
      if (b < 0 || b > kCoding.max_bucket()) {
        bad = true;
        return uint64_t{0};
      }
      LearnBucket(slot, static_cast<uint32_t>(b));
      *last = static_cast<uint32_t>(b);
      if (b < kCoding.exact()) return static_cast<uint64_t>(b);
      const uint32_t length = static_cast<uint32_t>(b) - kCoding.shift();
      return (uint64_t{1} << (length - 1)) | bits.GetWide(length - 1);
    };
    // Close symbols are nibbles, two to a byte; 15 continues in misc.
    bool half = false;
    uint8_t close_byte = 0;
    auto close_one = [&]() __attribute__((always_inline))->bool {
      uint32_t symbol;
      if (half) {
        symbol = close_byte >> 4;
      } else {
        if (!closes.Byte(&close_byte)) return false;
        symbol = close_byte & 15;
      }
      half = !half;
      if (symbol == kCloseField) {
        uint64_t more;
        if (!misc.Varint(&more) || more > (1u << 31)) return false;
        symbol += static_cast<uint32_t>(more);
      }
      --depth;
      Slice& s = slices[stack[depth].index];
      time = AddDelta(
          time,
          delta(symbol, &close_table[Slot<kExactBits>(stack[depth].path, tb)],
                &last_close));
      s.duration_ns = static_cast<int64_t>(static_cast<uint64_t>(time) -
                                           static_cast<uint64_t>(s.start_ns));
      return true;
    };
    // A field of the slice byte, continued in the misc section when full.
    auto field = [&](uint32_t value, uint32_t limit, uint32_t* out) {
      *out = value;
      if (value < limit) return true;
      uint64_t more;
      if (!misc.Varint(&more) || more > (1u << 31)) return false;
      *out += static_cast<uint32_t>(more);
      return true;
    };
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t b = *bytes.p++;  // n <= bytes.left()
      uint32_t pops_code, open_code;
      if (!field((b >> 1) & 3, kPopsField, &pops_code)) {
        return Malformed("slice shapes");
      }
      uint16_t& predicted_pops = pops_table[Slot<kExactBits>(~last_path, tb)];
      const uint32_t pops = pops_code == 0 ? predicted_pops : pops_code - 1;
      predicted_pops = static_cast<uint16_t>(std::min<uint32_t>(pops, 0xFFFF));
      if (pops > depth) return Malformed("slices close unopened slices");
      uint32_t sibling = kNoName;
      for (uint32_t p = 0; p < pops; ++p) {
        sibling = slices[stack[depth - 1].index].name;
        if (!close_one()) return Malformed("slice closes");
      }
      const uint64_t parent = depth == 0 ? kRootPath : stack[depth - 1].path;
      const uint64_t context = Mix(parent, sibling);
      uint32_t& predicted = name_table[Slot<kExactBits>(context, tb)];
      Slice& s = slices[i];
      if (b & 1) {
        if (!names.Varint32(&predicted)) return Malformed("slice names");
      }
      s.name = predicted;
      if (!field(b >> 3, kOpenField, &open_code)) {
        return Malformed("slice opens");
      }
      time = AddDelta(
          time, delta(open_code,
                      &open_table[Slot<kExactBits>(Mix(context, s.name), tb)],
                      &last_open));
      s.start_ns = time;
      s.depth = static_cast<uint32_t>(depth);
      last_path = Mix(~parent, s.name);
      if (depth == open_.size()) {
        open_.resize(2 * depth);
        stack = open_.data();
      }
      stack[depth].path = last_path;
      stack[depth].index = static_cast<uint32_t>(i);
      ++depth;
    }
    while (depth > 0) {
      if (!close_one()) return Malformed("slice closes");
    }
    if (bad) return Malformed("a time delta's size is out of range");
    sec_[kSliceSection] = bytes;
    sec_[kNameSection] = names;
    sec_[kCloseSection] = closes;
    sec_[kMiscSection] = misc;
    *bit_reader = bits;
    return absl::OkStatus();
  }

  struct OpenSlice {
    uint64_t path;
    uint32_t index;
  };
  Cursor sec_[kSectionCount];
  DeltaCoding coding_ = kCoding12;
  std::vector<OpenSlice> open_;
  SlicePredictor predictor_;
};

// The encoder's entry points, compiled for each instruction set of
// cpu_dispatch.h.
PODSCOPE_TARGET_V3 void EncodeTrackV3(Encoder* encoder,
                                      const TrackEvents& events) {
  encoder->Track(events);
}
PODSCOPE_TARGET_BASELINE void EncodeTrackBaseline(Encoder* encoder,
                                                  const TrackEvents& events) {
  encoder->Track(events);
}
PODSCOPE_TARGET_V3 bool EncodeTrackEndOrderV3(
    Encoder* encoder, TrackEvents& events,
    std::pair<int64_t, int64_t>* time_range) {
  return encoder->TrackEndOrder(events, time_range);
}
PODSCOPE_TARGET_BASELINE bool EncodeTrackEndOrderBaseline(
    Encoder* encoder, TrackEvents& events,
    std::pair<int64_t, int64_t>* time_range) {
  return encoder->TrackEndOrder(events, time_range);
}

}  // namespace

struct PackedChunkEncoder::Impl {
  explicit Impl(uint8_t layout) : encoder(layout) {}
  Encoder encoder;
};

PackedChunkEncoder::PackedChunkEncoder(uint8_t layout)
    : impl_(std::make_unique<Impl>(layout == kLayout11 ? kLayout11
                                                       : kPackedChunkLayout)) {}
PackedChunkEncoder::~PackedChunkEncoder() = default;

void PackedChunkEncoder::Add(const TrackEvents& events) {
  if (base::UseX86V3()) {
    EncodeTrackV3(&impl_->encoder, events);
  } else {
    EncodeTrackBaseline(&impl_->encoder, events);
  }
}

bool PackedChunkEncoder::AddEndOrder(TrackEvents& events,
                                     std::pair<int64_t, int64_t>* time_range) {
  return base::UseX86V3()
             ? EncodeTrackEndOrderV3(&impl_->encoder, events, time_range)
             : EncodeTrackEndOrderBaseline(&impl_->encoder, events, time_range);
}

void PackedChunkEncoder::Finish(std::vector<std::string_view>* compressible,
                                std::string_view* bits) {
  impl_->encoder.Finish(compressible, bits);
}

void PackedChunkEncoder::Reset() { impl_->encoder.Reset(); }

bool IsPackedChunk(std::string_view bytes) {
  return !bytes.empty() && bytes[0] == 0;
}

absl::Status DecodePackedChunk(std::string_view bytes,
                               std::vector<TrackEvents>* out) {
  thread_local Decoder decoder;
  return decoder.Decode(bytes, out);
}

}  // namespace podscope::trace_format
