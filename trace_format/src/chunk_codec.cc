#include "podscope/trace_format/chunk_codec.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_format.h"
#include "podscope/base/coding.h"

namespace podscope::trace_format {
namespace {

constexpr uint32_t kNone = ~0u;

// Per-thread scratch vectors are kept between calls (a writer sorts every
// track of every chunk) unless they grew past this many elements (a
// reader merging a whole long track), which are given back.
constexpr size_t kScratchKeep = size_t{1} << 18;
template <typename T>
void Trim(std::vector<T>& v) {
  if (v.capacity() > kScratchKeep) std::vector<T>().swap(v);
}

// Deltas are taken with wrap-around (base::WrappingSub): readers add them
// with wrap-around, so they decode exactly, where a plain subtraction would
// be undefined behaviour for times more than 2^63 ns apart.
using base::WrappingSub;

// Reorders slices given in end order (each slice after every slice nested
// in it) into SliceOrder, in linear time: each slice adopts as children the
// finished subtrees it contains, which sit on top of the stack in start
// order. Returns false if the result is not in SliceOrder (the input was in
// some other order); the caller then sorts.
bool PostOrderToPreOrder(const std::vector<Slice>& slices,
                         std::vector<uint32_t>* order) {
  struct Subtree {
    uint32_t head, tail;
  };
  const uint32_t n = static_cast<uint32_t>(slices.size());
  // Scratch kept per thread: a writer sorts every track of every chunk.
  thread_local std::vector<uint32_t> next;
  thread_local std::vector<Subtree> stack;
  next.assign(n, kNone);
  stack.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const Slice& s = slices[i];
    size_t first_child = stack.size();
    while (first_child > 0) {
      const Slice& root = slices[stack[first_child - 1].head];
      if (root.start_ns < s.start_ns || root.end_ns() > s.end_ns()) break;
      --first_child;
    }
    Subtree tree{i, i};
    if (first_child < stack.size()) {
      next[i] = stack[first_child].head;
      for (size_t j = first_child; j + 1 < stack.size(); ++j) {
        next[stack[j].tail] = stack[j + 1].head;
      }
      tree.tail = stack.back().tail;
      stack.resize(first_child);
    }
    stack.push_back(tree);
  }
  for (size_t j = 0; j + 1 < stack.size(); ++j) {
    next[stack[j].tail] = stack[j + 1].head;
  }
  order->clear();
  order->reserve(n);
  for (uint32_t i = stack.empty() ? kNone : stack.front().head; i != kNone;
       i = next[i]) {
    if (!order->empty() && SliceOrder(slices[i], slices[order->back()])) {
      return false;
    }
    order->push_back(i);
  }
  Trim(next);
  Trim(stack);
  return order->size() == n;
}

template <typename T>
bool IsIdentity(const std::vector<T>& order) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != i) return false;
  }
  return true;
}

// Applies `order` (new position -> old index) to `items` and to the indices
// of `kind` in args and flows.
template <typename Event>
void ApplyOrder(const std::vector<uint32_t>& order, EventKind kind,
                std::vector<Event>* items, TrackEvents* events) {
  thread_local std::vector<Event> sorted;
  sorted.resize(items->size());
  Event* out = sorted.data();
  const Event* in = items->data();
  for (uint32_t old_index : order) *out++ = in[old_index];
  items->swap(sorted);
  Trim(sorted);
  if (events->args.empty() && events->flows.empty()) return;
  thread_local std::vector<uint32_t> new_position;
  new_position.resize(order.size());
  for (uint32_t i = 0; i < order.size(); ++i) new_position[order[i]] = i;
  for (EventArgs& a : events->args) {
    if (a.kind == kind && a.index < new_position.size()) {
      a.index = new_position[a.index];
    }
  }
  for (FlowLink& f : events->flows) {
    if (f.kind == kind && f.index < new_position.size()) {
      f.index = new_position[f.index];
    }
  }
  Trim(new_position);
}

template <typename Event, typename Less>
void SortColumn(EventKind kind, std::vector<Event>* items, TrackEvents* events,
                Less less) {
  if (std::is_sorted(items->begin(), items->end(), less)) return;
  std::vector<uint32_t> order(items->size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return less((*items)[a], (*items)[b]);
  });
  ApplyOrder(order, kind, items, events);
}

bool EncodeNestedSlices(const std::vector<Slice>& slices,
                        proto::TrackEvents* out) {
  auto* deltas = out->mutable_slice_boundary_delta();
  auto* pops = out->mutable_slice_pops();
  deltas->Reserve(static_cast<int>(slices.size() * 2));
  pops->Reserve(static_cast<int>(slices.size()));
  std::vector<int64_t> open_ends;
  int64_t previous = 0;
  for (const Slice& s : slices) {
    uint32_t closed = 0;
    while (!open_ends.empty() && open_ends.back() < s.end_ns()) {
      const int64_t end = open_ends.back();
      if (end > s.start_ns) return false;  // overlaps without nesting
      deltas->AddAlreadyReserved(static_cast<uint64_t>(end - previous));
      previous = end;
      open_ends.pop_back();
      ++closed;
    }
    if (s.start_ns < previous) return false;
    deltas->AddAlreadyReserved(static_cast<uint64_t>(s.start_ns - previous));
    previous = s.start_ns;
    open_ends.push_back(s.end_ns());
    pops->AddAlreadyReserved(closed);
  }
  while (!open_ends.empty()) {
    deltas->AddAlreadyReserved(
        static_cast<uint64_t>(open_ends.back() - previous));
    previous = open_ends.back();
    open_ends.pop_back();
  }
  return true;
}

void EncodeFlatSlices(const std::vector<Slice>& slices,
                      proto::TrackEvents* out) {
  int64_t previous = 0;
  for (const Slice& s : slices) {
    out->add_slice_start_delta(WrappingSub(s.start_ns, previous));
    out->add_slice_duration(static_cast<uint64_t>(s.duration_ns));
    previous = s.start_ns;
  }
}

}  // namespace

void ComputeSliceDepths(std::vector<Slice>* slices) {
  SliceDepths depths;
  for (Slice& s : *slices) s.depth = depths.Next(s);
}

void SortTrackEvents(TrackEvents* events) {
  auto& slices = events->slices;
  if (!std::is_sorted(slices.begin(), slices.end(), SliceOrder)) {
    thread_local std::vector<uint32_t> order;
    if (!PostOrderToPreOrder(slices, &order)) {
      order.resize(slices.size());
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return SliceOrder(slices[a], slices[b]);
      });
    }
    if (!IsIdentity(order)) {
      ApplyOrder(order, EventKind::kSlice, &slices, events);
    }
    Trim(order);
  }
  SortColumn(
      EventKind::kInstant, &events->instants, events,
      [](const Instant& a, const Instant& b) { return a.ts_ns < b.ts_ns; });
  std::stable_sort(events->counters.begin(), events->counters.end(),
                   [](const CounterSample& a, const CounterSample& b) {
                     return a.ts_ns < b.ts_ns;
                   });
  std::stable_sort(events->samples.begin(), events->samples.end(),
                   [](const StackSample& a, const StackSample& b) {
                     return a.ts_ns < b.ts_ns;
                   });
  auto key = [](const auto& x) { return std::make_pair(x.kind, x.index); };
  std::stable_sort(
      events->args.begin(), events->args.end(),
      [&](const EventArgs& a, const EventArgs& b) { return key(a) < key(b); });
  std::stable_sort(
      events->flows.begin(), events->flows.end(),
      [&](const FlowLink& a, const FlowLink& b) { return key(a) < key(b); });
}

void EncodeTrackEvents(const TrackEvents& events, proto::TrackEvents* out) {
  out->set_track_id(events.track_id);
  const auto& slices = events.slices;
  if (!slices.empty()) {
    auto* names = out->mutable_slice_name();
    names->Reserve(static_cast<int>(slices.size()));
    for (const Slice& s : slices) names->AddAlreadyReserved(s.name);
    if (!EncodeNestedSlices(slices, out)) {
      out->clear_slice_boundary_delta();
      out->clear_slice_pops();
      EncodeFlatSlices(slices, out);
    }
  }
  int64_t previous = 0;
  for (const Instant& e : events.instants) {
    out->add_instant_ts_delta(WrappingSub(e.ts_ns, previous));
    out->add_instant_name(e.name);
    previous = e.ts_ns;
  }
  previous = 0;
  for (const CounterSample& c : events.counters) {
    out->add_counter_ts_delta(WrappingSub(c.ts_ns, previous));
    previous = c.ts_ns;
  }
  if (CountersAreIntegral(events.counters)) {
    int64_t previous_value = 0;
    for (const CounterSample& c : events.counters) {
      const int64_t v = static_cast<int64_t>(c.value);
      out->add_counter_int_delta(v - previous_value);
      previous_value = v;
    }
  } else {
    for (const CounterSample& c : events.counters) {
      out->add_counter_value(c.value);
    }
  }
  previous = 0;
  for (const StackSample& s : events.samples) {
    out->add_sample_ts_delta(WrappingSub(s.ts_ns, previous));
    out->add_sample_stack(s.stack);
    previous = s.ts_ns;
  }
  for (const EventArgs& a : events.args) {
    proto::EventArgs* pa = out->add_args();
    pa->set_kind(static_cast<proto::EventKind>(a.kind));
    pa->set_event_index(a.index);
    for (const Arg& arg : a.args) {
      proto::Arg* p = pa->add_args();
      p->set_key(arg.key);
      if (const auto* i = std::get_if<int64_t>(&arg.value)) {
        p->set_int_value(*i);
      } else if (const auto* d = std::get_if<double>(&arg.value)) {
        p->set_double_value(*d);
      } else {
        p->set_string_value(std::get<StringId>(arg.value).id);
      }
    }
  }
  for (const FlowLink& f : events.flows) {
    proto::Flow* pf = out->add_flows();
    pf->set_kind(static_cast<proto::EventKind>(f.kind));
    pf->set_event_index(f.index);
    pf->set_flow_id(f.flow_id);
    pf->set_phase(static_cast<proto::FlowPhase>(f.phase));
  }
}

}  // namespace podscope::trace_format
