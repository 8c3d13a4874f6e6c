#include "src/external_events.h"

#include <atomic>
#include <cstring>

#include "src/string_registry.h"

namespace podscope::profiler {
namespace internal {

ExternalEvents& ExternalEvents::Get() {
  static auto* events = new ExternalEvents();
  return *events;
}

uint32_t ExternalEvents::AddTrack(const trace_format::proto::Track& track) {
  std::lock_guard<std::mutex> lock(mutex_);
  tracks_.push_back(track);
  return static_cast<uint32_t>(tracks_.size());
}

void ExternalEvents::Add(ExternalEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_.size() >= kMaxPending) {
    ++dropped_;
    return;
  }
  pending_.push_back(std::move(event));
}

void ExternalEvents::Take(std::vector<ExternalEvent>* events,
                          std::vector<trace_format::proto::Track>* tracks) {
  std::lock_guard<std::mutex> lock(mutex_);
  events->clear();
  events->swap(pending_);
  *tracks = tracks_;
}

std::vector<trace_format::proto::Track> ExternalEvents::Tracks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tracks_;
}

uint64_t ExternalEvents::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

void ExternalEvents::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.clear();
}

}  // namespace internal

// Counters after host threads and device streams, in the order they were
// registered (ties are broken by track id).
constexpr int kCounterSortIndex = 2000000;

TrackHandle RegisterDeviceStreamTrack(int device_id, int stream_id,
                                      std::string_view name) {
  trace_format::proto::Track t;
  t.set_kind(trace_format::proto::TRACK_KIND_DEVICE_STREAM);
  t.set_name(std::string(name));
  t.set_device_id(device_id);
  t.set_stream_id(stream_id);
  // Device streams after host threads, in device order.
  t.set_sort_index(1000000 + device_id * 100 + stream_id);
  return {internal::ExternalEvents::Get().AddTrack(t)};
}

TrackHandle RegisterCounterTrack(std::string_view name, std::string_view unit) {
  trace_format::proto::Track t;
  t.set_kind(trace_format::proto::TRACK_KIND_COUNTER);
  t.set_name(std::string(name));
  t.set_unit(std::string(unit));
  t.set_sort_index(kCounterSortIndex);
  return {internal::ExternalEvents::Get().AddTrack(t)};
}

int64_t NowNs() { return MonotonicNs(); }

uint64_t NewFlowId() {
  // High bit set: never collides with small ids chosen by hand.
  static std::atomic<uint64_t> next{(uint64_t{1} << 63) + 1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void RecordSlice(TrackHandle track, int64_t start_ns, int64_t end_ns,
                 std::string_view name, uint64_t flow_in,
                 std::initializer_list<EventArg> args) {
  if (!track.valid() || !internal::Enabled(Level::kCritical)) return;
  internal::ExternalEvent e{
      track.id, false, start_ns, end_ns, internal::InternDynamic(name),
      flow_in,  0,     {}};
  for (const EventArg& a : args) {
    const uint32_t key = internal::InternDynamic(a.key);
    e.args.push_back(std::visit(
        [&](const auto& value) { return internal::MakeArg(key, value); },
        a.value));
  }
  internal::ExternalEvents::Get().Add(std::move(e));
}

void RecordInstant(TrackHandle track, int64_t ts_ns, std::string_view name,
                   std::initializer_list<EventArg> args) {
  if (!track.valid() || !internal::Enabled(Level::kCritical)) return;
  internal::ExternalEvent e{
      track.id, false, ts_ns, ts_ns, internal::InternDynamic(name),
      0,        0,     {},    true};
  for (const EventArg& a : args) {
    const uint32_t key = internal::InternDynamic(a.key);
    e.args.push_back(std::visit(
        [&](const auto& value) { return internal::MakeArg(key, value); },
        a.value));
  }
  internal::ExternalEvents::Get().Add(std::move(e));
}

void RecordCounterValue(TrackHandle track, int64_t ts_ns, double value) {
  if (!track.valid() || !internal::Enabled(Level::kCritical)) return;
  internal::ExternalEvents::Get().Add(
      {track.id, true, ts_ns, ts_ns, 0, 0, value, {}});
}

}  // namespace podscope::profiler
