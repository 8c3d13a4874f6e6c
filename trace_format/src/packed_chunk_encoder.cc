// The packed chunk encoder: every track's events written straight into a
// few byte sections shaped for a fast entropy coder, and one section of raw
// bits (packed_chunk_layout.h; docs/trace-format.md, "Packed chunks").
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "packed_chunk_layout.h"
#include "podscope/base/coding.h"
#include "podscope/base/cpu_dispatch.h"
#include "podscope/base/sorting.h"
#include "podscope/trace_format/chunk_codec.h"

namespace podscope::trace_format {
namespace packed_chunk {
namespace {

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
  // One function, over 100 lines, on purpose: it is the writer's per-slice
  // loop, and its state (time, open stack, predictor slots, stream
  // cursors) lives in registers across the whole loop; split into calls it
  // would go through memory at every slice (format.write_events_per_s).
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
    SlicePredictor::Tables* const tables = predictor_.tables();
    uint32_t* const name_table = tables->names;
    uint16_t* const open_table = tables->opens;
    uint16_t* const close_table = tables->closes;
    uint16_t* const pops_table = tables->pops;
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
}  // namespace packed_chunk

struct PackedChunkEncoder::Impl {
  explicit Impl(uint8_t layout) : encoder(layout) {}
  packed_chunk::Encoder encoder;
};

PackedChunkEncoder::PackedChunkEncoder(uint8_t layout)
    : impl_(std::make_unique<Impl>(layout == packed_chunk::kLayout11
                                       ? packed_chunk::kLayout11
                                       : kPackedChunkLayout)) {}
PackedChunkEncoder::~PackedChunkEncoder() = default;

void PackedChunkEncoder::Add(const TrackEvents& events) {
  if (base::UseX86V3()) {
    packed_chunk::EncodeTrackV3(&impl_->encoder, events);
  } else {
    packed_chunk::EncodeTrackBaseline(&impl_->encoder, events);
  }
}

bool PackedChunkEncoder::AddEndOrder(TrackEvents& events,
                                     std::pair<int64_t, int64_t>* time_range) {
  return base::UseX86V3() ? packed_chunk::EncodeTrackEndOrderV3(
                                &impl_->encoder, events, time_range)
                          : packed_chunk::EncodeTrackEndOrderBaseline(
                                &impl_->encoder, events, time_range);
}

void PackedChunkEncoder::Finish(std::vector<std::string_view>* compressible,
                                std::string_view* bits) {
  impl_->encoder.Finish(compressible, bits);
}

void PackedChunkEncoder::Reset() { impl_->encoder.Reset(); }

}  // namespace podscope::trace_format
