// The packed chunk decoder: a chunk's sections back into each track's
// events (packed_chunk_layout.h; docs/trace-format.md, "Packed chunks").
// Everything in a chunk is hostile until checked: counts are bounded by the
// bytes of their sections before anything is allocated.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "packed_chunk_layout.h"
#include "podscope/base/coding.h"
#include "podscope/base/cpu_dispatch.h"
#include "podscope/trace_format/chunk_codec.h"

namespace podscope::trace_format {
namespace packed_chunk {
namespace {

absl::Status Malformed(const char* what) {
  return absl::DataLossError(
      absl::StrFormat("packed chunk is malformed: %s", what));
}

int64_t AddDelta(int64_t start, uint64_t delta) {
  return base::WrappingAddDelta(start, delta);
}

struct TrackHeader {
  uint32_t track_id = 0, flags = 0;
  uint64_t slices = 0, instants = 0, counters = 0, samples = 0, args = 0,
           flows = 0;
};

// A hash of Mix and the table slots the loop takes of it and of its
// complement. Mix's final fold, x ^ (x >> 32), leaves the high 32 bits of
// its product as they are, and a layout 1.2 slot is high bits: taken from
// the product, a slot need not wait for the fold.
struct Mixed {
  uint64_t hash;
  uint32_t slot, not_slot;
};
template <uint32_t kExactBits>
inline Mixed MixAndSlot(uint64_t a, uint32_t b, uint32_t bits) {
  static_assert(kMaxTableBits <= 32);
  const uint64_t product = MixProduct(a, b);
  const uint64_t hash = MixFold(product);
  if constexpr (kExactBits == kCoding11.exact_bits) {
    return {hash, Slot<kExactBits>(hash, bits), Slot<kExactBits>(~hash, bits)};
  } else {
    return {hash, static_cast<uint32_t>(product >> (64 - bits)),
            static_cast<uint32_t>(~product >> (64 - bits))};
  }
}

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
    BitReader bits(sec_[kBitsSection].p, sec_[kBitsSection].left());
    // The tracks already in `out` are filled again, keeping what their
    // columns allocated: a reader decoding chunk after chunk into one
    // vector allocates (and the kernel zeroes pages) once, not per chunk.
    size_t used = 0;
    absl::Status status;
    while (t.left() > 0) {
      TrackHeader h;
      if (!t.Varint32(&h.track_id) || !t.Varint32(&h.flags) ||
          !t.Varint(&h.slices) || !t.Varint(&h.instants) ||
          !t.Varint(&h.counters) || !t.Varint(&h.samples) ||
          !t.Varint(&h.args) || !t.Varint(&h.flows)) {
        status = Malformed("track header");
        break;
      }
      if (used == out->size()) out->emplace_back();
      TrackEvents& e = (*out)[used++];
      Clear(&e);
      e.track_id = h.track_id;
      status = DecodeTrack(h, &bits, &e);
      if (!status.ok()) break;
    }
    out->resize(used);
    if (status.ok() && bits.overrun()) {
      status = Malformed("the bit section is too short");
    }
    return status;
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
    if (h.slices == 0) {
      e->slices.clear();
    } else {
      absl::Status s = flat ? Flat(h.slices, e)
                       : coding_.exact_bits == kCoding11.exact_bits
                           ? Nested<kCoding11.exact_bits>(h.slices, bits, e)
                           : Nested<kCoding12.exact_bits>(h.slices, bits, e);
      if (!s.ok()) {
        e->slices.clear();
        return s;
      }
    }
    if (auto s = Timed(h, e); !s.ok()) return s;
    if (auto s = Args(h, e); !s.ok()) return s;
    return Flows(h, e);
  }

  // Instants, counters and stack samples, from the misc section.
  absl::Status Timed(const TrackHeader& h, TrackEvents* e) {
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
    return absl::OkStatus();
  }

  // Empties a reused track but for its slices, which the slice decoders
  // size and overwrite whole (DecodeTrack empties them for a track with
  // none, or on an error).
  static void Clear(TrackEvents* e) {
    e->instants.clear();
    e->counters.clear();
    e->samples.clear();
    e->args.clear();
    e->flows.clear();
  }

  // Whether an argument's or a flow's event (of kind 0, a slice, or 1, an
  // instant) was decoded.
  static bool Valid(const TrackEvents& e, uint64_t kind, uint64_t index) {
    if (kind == 0) return index < e.slices.size();
    if (kind == 1) return index < e.instants.size();
    return false;
  }

  absl::Status Args(const TrackHeader& h, TrackEvents* e) {
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
      if (!Valid(*e, kind, index)) {
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
          uint64_t v = 0;
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
    return absl::OkStatus();
  }

  absl::Status Flows(const TrackHeader& h, TrackEvents* e) {
    Cursor& m = sec_[kMiscSection];
    e->flows.resize(h.flows);
    uint64_t previous_kind = ~uint64_t{0}, previous_index = 0;

    for (FlowLink& f : e->flows) {
      uint64_t kind, delta, phase;
      if (!m.Varint(&kind) || !m.Varint(&delta) || !m.Varint(&f.flow_id) ||
          !m.Varint(&phase)) {
        return Malformed("flows");
      }
      const uint64_t index =
          (kind == previous_kind ? previous_index : 0) + delta;
      if (!Valid(*e, kind, index))
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

  // One function, over 100 lines, on purpose: the reader's per-slice loop,
  // kept whole so that its cursors and predictor state stay in registers
  // (format.read_events_per_s), as the encoder's Nested. The loop has more
  // state than a CPU has registers, so what it keeps is chosen: the slice
  // and close sections are read by index, the tables from one pointer, and
  // slices are written in place.
  template <uint32_t kExactBits>
  absl::Status Nested(uint64_t n, BitReader* bit_reader, TrackEvents* e) {
    constexpr DeltaCoding kCoding{kExactBits};
    // Each slice takes a byte of the slice section and, as every slice is
    // closed exactly once, a nibble of the close section: with that
    // checked here, neither section is checked again in the loop.
    if (n > 2 * sec_[kCloseSection].left() || n > sec_[kSliceSection].left()) {
      return Malformed("slice counts exceed the sections");
    }
    const uint8_t* const shapes = sec_[kSliceSection].p;
    const uint8_t* const close_nibbles = sec_[kCloseSection].p;
    uint64_t closed = 0;
    // Cursors live in locals for the loop and are written back at the end.
    Cursor names = sec_[kNameSection];
    Cursor misc = sec_[kMiscSection];
    BitReader bits = *bit_reader;
    const uint32_t tb = predictor_.Reset(n);
    // Read as tables->x[slot] in the loop, each a constant displacement
    // from the one pointer, not four pointers of their own.
    SlicePredictor::Tables* const tables = predictor_.tables();
    uint32_t last_open = 0, last_close = 0;
    // The vector holds what an earlier chunk's track left (Clear keeps
    // it): growing it zeroes only the new room, and the loop writes every
    // field of every slice (a slice's duration when it closes).
    e->slices.resize(n);
    Slice* out = e->slices.data();
    // The stack of open slices, grown as deep nesting needs.
    if (open_.size() < 64) open_.resize(64);
    OpenSlice* stack = open_.data();
    size_t stack_size = open_.size();
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
    // Close symbols are nibbles, low one first; 15 continues in misc.
    auto close_one = [&]() __attribute__((always_inline))->bool {
      uint32_t symbol =
          (close_nibbles[closed >> 1] >> ((closed & 1) << 2)) & 15;
      ++closed;
      if (symbol == kCloseField) {
        uint64_t more;
        if (!misc.Varint(&more) || more > (1u << 31)) return false;
        symbol += static_cast<uint32_t>(more);
      }
      --depth;
      const OpenSlice& open = stack[depth];
      time = AddDelta(
          time, delta(symbol, &tables->closes[Slot<kExactBits>(open.path, tb)],
                      &last_close));
      open.slice->duration_ns = static_cast<int64_t>(
          static_cast<uint64_t>(time) - static_cast<uint64_t>(open.start_ns));
      return true;
    };
    // A field of the slice byte, continued in the misc section when full.
    auto field = [&](uint32_t value, uint32_t limit, uint32_t * out)
        __attribute__((always_inline)) {
      *out = value;
      if (value < limit) return true;
      uint64_t more;
      if (!misc.Varint(&more) || more > (1u << 31)) return false;
      *out += static_cast<uint32_t>(more);
      return true;
    };
    // The path of the innermost open slice: the last one opened, unless
    // slices closed since (then it is read back from the stack).
    uint64_t top_path = kRootPath;
    uint32_t pops_slot = Slot<kExactBits>(~kRootPath, tb);
    for (const uint8_t* shape = shapes; shape != shapes + n; ++shape, ++out) {
      const uint8_t b = *shape;
      uint32_t pops_code, open_code;
      if (!field((b >> 1) & 3, kPopsField, &pops_code)) {
        return Malformed("slice shapes");
      }
      uint16_t& predicted_pops = tables->pops[pops_slot];
      const uint32_t pops = pops_code == 0 ? predicted_pops : pops_code - 1;
      predicted_pops = static_cast<uint16_t>(std::min<uint32_t>(pops, 0xFFFF));
      if (pops > depth) return Malformed("slices close unopened slices");
      uint32_t sibling = kNoName;
      if (pops > 0) {
        for (uint32_t p = 0; p < pops; ++p) {
          sibling = stack[depth - 1].name;
          if (!close_one()) return Malformed("slice closes");
        }
        top_path = depth == 0 ? kRootPath : stack[depth - 1].path;
      }
      const uint64_t parent = top_path;
      const Mixed context = MixAndSlot<kExactBits>(parent, sibling, tb);
      uint32_t& predicted = tables->names[context.slot];
      if (b & 1) {
        if (!names.Varint32(&predicted)) return Malformed("slice names");
      }
      const uint32_t name = predicted;
      if (!field(b >> 3, kOpenField, &open_code)) {
        return Malformed("slice opens");
      }
      time = AddDelta(
          time,
          delta(
              open_code,
              &tables
                   ->opens[MixAndSlot<kExactBits>(context.hash, name, tb).slot],
              &last_open));
      out->start_ns = time;
      out->name = name;
      out->depth = static_cast<uint32_t>(depth);
      const Mixed path = MixAndSlot<kExactBits>(~parent, name, tb);
      top_path = path.hash;
      pops_slot = path.not_slot;
      if (depth == stack_size) {
        open_.resize(2 * depth);
        stack = open_.data();
        stack_size = open_.size();
      }
      stack[depth] = {path.hash, time, out, name};
      ++depth;
    }
    while (depth > 0) {
      if (!close_one()) return Malformed("slice closes");
    }
    if (bad) return Malformed("a time delta's size is out of range");
    sec_[kSliceSection].p += n;
    sec_[kCloseSection].p += (closed + 1) / 2;
    sec_[kNameSection] = names;
    sec_[kMiscSection] = misc;
    *bit_reader = bits;
    return absl::OkStatus();
  }

  // An open slice as the loop needs it again when it closes, and when its
  // next sibling takes its name as context: read from here, not from the
  // slice itself, they are one load and not two in a row.
  struct OpenSlice {
    uint64_t path;
    int64_t start_ns;
    Slice* slice;
    uint32_t name;
  };
  Cursor sec_[kSectionCount];
  DeltaCoding coding_ = kCoding12;
  std::vector<OpenSlice> open_;
  SlicePredictor predictor_;
};

// The decoder's entry points, compiled for each instruction set of
// cpu_dispatch.h, as the encoder's: flattened, the per-slice loop has its
// bit reads inline.
PODSCOPE_TARGET_V3 absl::Status DecodeV3(Decoder* decoder,
                                         std::string_view bytes,
                                         std::vector<TrackEvents>* out) {
  return decoder->Decode(bytes, out);
}
PODSCOPE_TARGET_BASELINE absl::Status DecodeBaseline(
    Decoder* decoder, std::string_view bytes, std::vector<TrackEvents>* out) {
  return decoder->Decode(bytes, out);
}

}  // namespace
}  // namespace packed_chunk

bool IsPackedChunk(std::string_view bytes) {
  return !bytes.empty() && bytes[0] == 0;
}

absl::Status DecodePackedChunk(std::string_view bytes,
                               std::vector<TrackEvents>* out) {
  thread_local packed_chunk::Decoder decoder;
  return base::UseX86V3() ? packed_chunk::DecodeV3(&decoder, bytes, out)
                          : packed_chunk::DecodeBaseline(&decoder, bytes, out);
}
}  // namespace podscope::trace_format
