// Decoding of chunk columns. Two sources feed one decoder: the columns of
// a parsed proto::TrackEvents, and the packed columns read straight from
// the serialised bytes (the fast path: no intermediate copies, no
// allocation per column).
#include <cstring>
#include <span>
#include <string_view>

#include "absl/strings/str_format.h"
#include "podscope/base/coding.h"
#include "podscope/trace_format/chunk_codec.h"

namespace podscope::trace_format {
namespace {

absl::Status ColumnError(uint32_t track, const char* what) {
  return absl::DataLossError(
      absl::StrFormat("track %d: malformed event columns: %s", track, what));
}

// Sums deltas with wrap-around: damaged data must not be undefined
// behaviour.
int64_t AddDelta(int64_t start, uint64_t delta) {
  return base::WrappingAddDelta(start, delta);
}

// ----------------------------------------------------------- column cursors

template <typename T>
class RepeatedCursor {
 public:
  explicit RepeatedCursor(const google::protobuf::RepeatedField<T>& f)
      : data_(f.data()), size_(static_cast<size_t>(f.size())) {}
  size_t size() const { return size_; }
  T Next() { return data_[i_++]; }

 private:
  const T* data_;
  size_t size_;
  size_t i_ = 0;
};

// A packed varint column. Every varint ends at a byte below 0x80 and the
// span's last byte is one (checked in Set), so reading size() values never
// runs past the span.
class VarintCursor {
 public:
  bool Set(std::string_view bytes) {
    p_ = reinterpret_cast<const uint8_t*>(bytes.data());
    size_ = 0;
    if (bytes.empty()) return true;
    if (p_[bytes.size() - 1] & 0x80) return false;
    // Count the bytes that end a varint, eight at a time.
    size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, p_ + i, 8);
      size_ +=
          static_cast<size_t>(__builtin_popcountll(~w & 0x8080808080808080ull));
    }
    for (; i < bytes.size(); ++i) size_ += (p_[i] & 0x80) == 0;
    return true;
  }
  size_t size() const { return size_; }
  uint64_t NextRaw() {
    uint64_t b = *p_++;
    if (b < 0x80) return b;  // the common case: one byte
    uint64_t v = b & 0x7f;
    for (int shift = 7;; shift += 7) {
      b = *p_++;
      if (shift < 64) v |= (b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  }

 protected:
  const uint8_t* p_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
class WireCursor : public VarintCursor {
 public:
  T Next() {
    const uint64_t v = NextRaw();
    if constexpr (std::is_same_v<T, int64_t>) {  // sint64: zigzag
      return base::ZigZagDecode64(v);
    } else {
      return static_cast<T>(v);
    }
  }
};

class DoubleCursor {
 public:
  bool Set(std::string_view bytes) {
    if (bytes.size() % 8 != 0) return false;
    p_ = bytes.data();
    size_ = bytes.size() / 8;
    return true;
  }
  size_t size() const { return size_; }
  double Next() {
    double d;
    std::memcpy(&d, p_, 8);  // little-endian on every supported target
    p_ += 8;
    return d;
  }

 private:
  const char* p_ = nullptr;
  size_t size_ = 0;
};

// ------------------------------------------------------------- the decoder

// Cols provides the cursors (by the proto field names) and ForEachArgs /
// ForEachFlow calling a function with each parsed message. Each kind of
// event has its own function template below; all are instantiated with the
// same Cols in this file, so the compiler keeps them as one loop each.

// Nested slices: each slice's pops (slices closed before it opens) and two
// boundary deltas per slice, its start and its end.
template <typename Cols>
absl::Status DecodeNestedSlices(uint32_t track_id, Cols& c, size_t n,
                                TrackEvents* events) {
  if (c.slice_pops.size() != n) {
    return ColumnError(track_id, "slice_pops length != slice_name length");
  }
  if (c.slice_boundary_delta.size() != 2 * n) {
    return ColumnError(track_id, "slice_boundary_delta length != 2 x slices");
  }
  events->slices.resize(n);
  Slice* slices = events->slices.data();
  std::vector<uint32_t> open;
  int64_t time = 0;
  auto close_one = [&]() {
    Slice& s = slices[open.back()];
    time = AddDelta(time, c.slice_boundary_delta.Next());
    s.duration_ns = static_cast<int64_t>(static_cast<uint64_t>(time) -
                                         static_cast<uint64_t>(s.start_ns));
    open.pop_back();
  };
  for (size_t i = 0; i < n; ++i) {
    const uint32_t pops = c.slice_pops.Next();
    if (pops > open.size()) {
      return ColumnError(track_id, "slice_pops closes unopened slices");
    }
    for (uint32_t p = 0; p < pops; ++p) close_one();
    time = AddDelta(time, c.slice_boundary_delta.Next());
    Slice& s = slices[i];
    s.start_ns = time;
    s.name = c.slice_name.Next();
    s.depth = static_cast<uint32_t>(open.size());
    open.push_back(static_cast<uint32_t>(i));
  }
  while (!open.empty()) close_one();
  return absl::OkStatus();
}

template <typename Cols>
absl::Status DecodeSlices(uint32_t track_id, Cols& c, TrackEvents* events) {
  const size_t n = c.slice_name.size();
  if (n > 0 && c.slice_boundary_delta.size() > 0) {
    return DecodeNestedSlices(track_id, c, n, events);
  }
  if (n > 0) {
    // Flat: a start delta and a duration per slice.
    if (c.slice_start_delta.size() != n || c.slice_duration.size() != n) {
      return ColumnError(track_id,
                         "slice_start_delta/slice_duration length != slices");
    }
    events->slices.resize(n);
    int64_t time = 0;
    for (Slice& s : events->slices) {
      time = AddDelta(time, static_cast<uint64_t>(c.slice_start_delta.Next()));
      s.start_ns = time;
      s.duration_ns = static_cast<int64_t>(c.slice_duration.Next());
      s.name = c.slice_name.Next();
    }
    ComputeSliceDepths(&events->slices);
    return absl::OkStatus();
  }
  if (c.slice_boundary_delta.size() > 0 || c.slice_start_delta.size() > 0 ||
      c.slice_pops.size() > 0 || c.slice_duration.size() > 0) {
    return ColumnError(track_id, "slice times without slice names");
  }
  return absl::OkStatus();
}

// Instants, counters and stack samples: a time delta each, and a value.
template <typename Cols>
absl::Status DecodeTimedEvents(uint32_t track_id, Cols& c,
                               TrackEvents* events) {
  if (c.instant_ts_delta.size() != c.instant_name.size()) {
    return ColumnError(track_id, "instant columns differ in length");
  }
  events->instants.resize(c.instant_name.size());
  int64_t time = 0;
  for (Instant& e : events->instants) {
    time = AddDelta(time, static_cast<uint64_t>(c.instant_ts_delta.Next()));
    e = {time, c.instant_name.Next()};
  }

  const size_t counters = c.counter_ts_delta.size();
  const bool integral = c.counter_int_delta.size() > 0;
  if ((integral ? c.counter_int_delta.size() : c.counter_value.size()) !=
          counters ||
      (integral && c.counter_value.size() > 0)) {
    return ColumnError(track_id, "counter columns differ in length");
  }
  events->counters.resize(counters);
  time = 0;
  int64_t value = 0;
  for (CounterSample& s : events->counters) {
    time = AddDelta(time, static_cast<uint64_t>(c.counter_ts_delta.Next()));
    s.ts_ns = time;
    if (integral) {
      value =
          AddDelta(value, static_cast<uint64_t>(c.counter_int_delta.Next()));
      s.value = static_cast<double>(value);
    } else {
      s.value = c.counter_value.Next();
    }
  }

  if (c.sample_ts_delta.size() != c.sample_stack.size()) {
    return ColumnError(track_id, "sample columns differ in length");
  }
  events->samples.resize(c.sample_stack.size());
  time = 0;
  for (StackSample& s : events->samples) {
    time = AddDelta(time, static_cast<uint64_t>(c.sample_ts_delta.Next()));
    s = {time, c.sample_stack.Next()};
  }
  return absl::OkStatus();
}

// Whether an argument or a flow's event exists (decoded before them).
bool RefersToEvent(const TrackEvents& events, proto::EventKind kind,
                   uint32_t index) {
  if (kind == proto::EVENT_KIND_SLICE) return index < events.slices.size();
  if (kind == proto::EVENT_KIND_INSTANT) return index < events.instants.size();
  return false;
}

void CopyArg(const proto::Arg& p, Arg* arg) {
  arg->key = p.key();
  switch (p.value_case()) {
    case proto::Arg::kIntValue:
      arg->value = p.int_value();
      break;
    case proto::Arg::kDoubleValue:
      arg->value = p.double_value();
      break;
    case proto::Arg::kStringValue:
      arg->value = StringId{p.string_value()};
      break;
    case proto::Arg::VALUE_NOT_SET:
      arg->value = int64_t{0};
      break;
  }
}

template <typename Cols>
absl::Status DecodeArgsAndFlows(uint32_t track_id, Cols& c,
                                TrackEvents* events) {
  absl::Status status;
  c.ForEachArgs([&](const proto::EventArgs& pa) {
    if (!status.ok()) return;
    if (!RefersToEvent(*events, pa.kind(), pa.event_index())) {
      status = ColumnError(track_id, "args refer to a missing event");
      return;
    }
    EventArgs& a = events->args.emplace_back();
    a.kind = static_cast<EventKind>(pa.kind());
    a.index = pa.event_index();
    a.args.reserve(pa.args_size());
    for (const proto::Arg& p : pa.args()) CopyArg(p, &a.args.emplace_back());
  });
  if (!status.ok()) return status;
  c.ForEachFlow([&](const proto::Flow& pf) {
    if (!status.ok()) return;
    if (!RefersToEvent(*events, pf.kind(), pf.event_index())) {
      status = ColumnError(track_id, "a flow refers to a missing event");
      return;
    }
    if (pf.phase() < proto::FLOW_PHASE_BEGIN ||
        pf.phase() > proto::FLOW_PHASE_END) {
      status = ColumnError(track_id, "unknown flow phase");
      return;
    }
    events->flows.push_back({static_cast<EventKind>(pf.kind()),
                             pf.event_index(), pf.flow_id(),
                             static_cast<FlowPhase>(pf.phase())});
  });
  return status;
}

template <typename Cols>
absl::Status DecodeColumns(uint32_t track_id, Cols& c, TrackEvents* events) {
  *events = TrackEvents();
  events->track_id = track_id;
  if (auto s = DecodeSlices(track_id, c, events); !s.ok()) return s;
  if (auto s = DecodeTimedEvents(track_id, c, events); !s.ok()) return s;
  return DecodeArgsAndFlows(track_id, c, events);
}

struct ProtoColumns {
  explicit ProtoColumns(const proto::TrackEvents& in)
      : in(in),
        slice_name(in.slice_name()),
        slice_boundary_delta(in.slice_boundary_delta()),
        slice_pops(in.slice_pops()),
        slice_start_delta(in.slice_start_delta()),
        slice_duration(in.slice_duration()),
        instant_ts_delta(in.instant_ts_delta()),
        instant_name(in.instant_name()),
        counter_ts_delta(in.counter_ts_delta()),
        counter_value(in.counter_value()),
        counter_int_delta(in.counter_int_delta()),
        sample_ts_delta(in.sample_ts_delta()),
        sample_stack(in.sample_stack()) {}
  template <typename Fn>
  void ForEachArgs(Fn fn) {
    for (const proto::EventArgs& a : in.args()) fn(a);
  }
  template <typename Fn>
  void ForEachFlow(Fn fn) {
    for (const proto::Flow& f : in.flows()) fn(f);
  }

  const proto::TrackEvents& in;
  RepeatedCursor<uint32_t> slice_name;
  RepeatedCursor<uint64_t> slice_boundary_delta;
  RepeatedCursor<uint32_t> slice_pops;
  RepeatedCursor<int64_t> slice_start_delta;
  RepeatedCursor<uint64_t> slice_duration;
  RepeatedCursor<int64_t> instant_ts_delta;
  RepeatedCursor<uint32_t> instant_name;
  RepeatedCursor<int64_t> counter_ts_delta;
  RepeatedCursor<double> counter_value;
  RepeatedCursor<int64_t> counter_int_delta;
  RepeatedCursor<int64_t> sample_ts_delta;
  RepeatedCursor<uint32_t> sample_stack;
};

// Reads one varint at *p (bounded by end); false when malformed.
bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  const uint8_t* next = base::DecodeVarint64(p, end, v);
  if (next == nullptr) return false;
  p = next;
  return true;
}

struct WireColumns {
  uint32_t track_id = 0;
  WireCursor<uint32_t> slice_name;
  WireCursor<uint64_t> slice_boundary_delta;
  WireCursor<uint32_t> slice_pops;
  WireCursor<int64_t> slice_start_delta;
  WireCursor<uint64_t> slice_duration;
  WireCursor<int64_t> instant_ts_delta;
  WireCursor<uint32_t> instant_name;
  WireCursor<int64_t> counter_ts_delta;
  DoubleCursor counter_value;
  WireCursor<int64_t> counter_int_delta;
  WireCursor<int64_t> sample_ts_delta;
  WireCursor<uint32_t> sample_stack;
  std::vector<std::string_view> args, flows;
  bool args_ok = true;

  template <typename Fn>
  void ForEachArgs(Fn fn) {
    proto::EventArgs a;
    for (std::string_view bytes : args) {
      if (!a.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        args_ok = false;
        return;
      }
      fn(a);
    }
  }
  template <typename Fn>
  void ForEachFlow(Fn fn) {
    proto::Flow f;
    for (std::string_view bytes : flows) {
      if (!f.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        args_ok = false;
        return;
      }
      fn(f);
    }
  }

  // Points the cursors at the columns of a serialised TrackEvents. Returns
  // false when the bytes are not in the form this writer produces (a column
  // unpacked or split in two, say) or are malformed; the caller then parses
  // with the generated code, which accepts every valid encoding.
  bool Parse(std::string_view bytes) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
    const uint8_t* end = p + bytes.size();
    uint32_t seen = 0;
    while (p < end) {
      uint64_t tag;
      if (!ReadVarint(p, end, &tag)) return false;
      const uint32_t field = static_cast<uint32_t>(tag >> 3);
      const uint32_t wire = tag & 7;
      if (field == 1 && wire == 0) {
        uint64_t v;
        if (!ReadVarint(p, end, &v)) return false;
        track_id = static_cast<uint32_t>(v);
        continue;
      }
      if (wire != 2) {
        if (field >= 2 && field <= 15) return false;  // unpacked column
        // An unknown field from a newer writer: skip it.
        uint64_t v;
        if (wire == 0) {
          if (!ReadVarint(p, end, &v)) return false;
        } else if (wire == 1) {
          if (end - p < 8) return false;
          p += 8;
        } else if (wire == 5) {
          if (end - p < 4) return false;
          p += 4;
        } else {
          return false;
        }
        continue;
      }
      uint64_t len;
      if (!ReadVarint(p, end, &len) || len > static_cast<uint64_t>(end - p)) {
        return false;
      }
      const std::string_view span(reinterpret_cast<const char*>(p), len);
      p += len;
      if (field >= 2 && field <= 13) {
        if (seen & (1u << field)) return false;  // split column
        seen |= 1u << field;
      }
      bool ok = true;
      switch (field) {
        case 2:
          ok = slice_name.Set(span);
          break;
        case 3:
          ok = slice_boundary_delta.Set(span);
          break;
        case 4:
          ok = slice_pops.Set(span);
          break;
        case 5:
          ok = slice_start_delta.Set(span);
          break;
        case 6:
          ok = slice_duration.Set(span);
          break;
        case 7:
          ok = instant_ts_delta.Set(span);
          break;
        case 8:
          ok = instant_name.Set(span);
          break;
        case 9:
          ok = counter_ts_delta.Set(span);
          break;
        case 10:
          ok = counter_value.Set(span);
          break;
        case 11:
          ok = counter_int_delta.Set(span);
          break;
        case 12:
          ok = sample_ts_delta.Set(span);
          break;
        case 13:
          ok = sample_stack.Set(span);
          break;
        case 14:
          args.push_back(span);
          break;
        case 15:
          flows.push_back(span);
          break;
        default:
          break;  // unknown: skipped
      }
      if (!ok) return false;
    }
    return true;
  }
};

}  // namespace

absl::Status DecodeTrackEvents(const proto::TrackEvents& in,
                               TrackEvents* events) {
  ProtoColumns columns(in);
  return DecodeColumns(in.track_id(), columns, events);
}

absl::Status DecodeTrackEventsBytes(std::string_view bytes,
                                    TrackEvents* events) {
  WireColumns columns;
  if (columns.Parse(bytes)) {
    absl::Status s = DecodeColumns(columns.track_id, columns, events);
    if (!columns.args_ok) {
      return ColumnError(columns.track_id, "args or flows do not parse");
    }
    return s;
  }
  proto::TrackEvents in;
  if (!in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("a track's events do not parse");
  }
  return DecodeTrackEvents(in, events);
}

absl::Status DecodeChunkBytes(std::string_view bytes,
                              std::vector<TrackEvents>* out) {
  if (IsPackedChunk(bytes)) return DecodePackedChunk(bytes, out);
  out->clear();
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* end = p + bytes.size();
  while (p < end) {
    uint64_t tag, len;
    if (!ReadVarint(p, end, &tag) || (tag & 7) != 2 ||
        !ReadVarint(p, end, &len) || len > static_cast<uint64_t>(end - p)) {
      return absl::DataLossError("the chunk's framing is malformed");
    }
    const std::string_view span(reinterpret_cast<const char*>(p), len);
    p += len;
    if ((tag >> 3) != 1) continue;  // a field from a newer writer
    if (auto s = DecodeTrackEventsBytes(span, &out->emplace_back()); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace podscope::trace_format
