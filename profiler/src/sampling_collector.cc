#include "src/sampling_collector.h"

#include <dirent.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"

namespace podscope::profiler::internal {
namespace {

std::mutex g_active_mutex;
SamplingCollector* g_active = nullptr;  // guarded by g_active_mutex

}  // namespace

absl::StatusOr<std::unique_ptr<SamplingCollector>> SamplingCollector::Start(
    int rate_hz) {
  sampling::SamplerOptions options;
  options.rate_hz = rate_hz;
  PODSCOPE_ASSIGN_OR_RETURN(auto sampler,
                            sampling::StackSampler::Create(options));
  std::unique_ptr<SamplingCollector> c(new SamplingCollector());
  c->sampler_ = std::move(sampler);
  c->RegisterProcessThreads();
  std::lock_guard<std::mutex> lock(g_active_mutex);
  g_active = c.get();
  return c;
}

SamplingCollector::~SamplingCollector() {
  {
    std::lock_guard<std::mutex> lock(g_active_mutex);
    if (g_active == this) g_active = nullptr;
  }
  if (sampler_) sampler_->Stop();
}

void SamplingCollector::RegisterThread(pid_t tid) {
  // A thread that exited before registration is simply not sampled.
  (void)sampler_->RegisterThread(tid);
}

void SamplingCollector::RegisterProcessThreads() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return;  // no /proc: only recording threads
  listed_.clear();
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || tid <= 0) continue;
    listed_.push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  // Already sampled, or exited since the listing: both are fine.
  sampler_->RegisterUnsampled(listed_);
}

void SamplingCollector::RegisterWithActive(pid_t tid) {
  std::lock_guard<std::mutex> lock(g_active_mutex);
  if (g_active != nullptr) g_active->RegisterThread(tid);
}

uint64_t SamplingCollector::dropped() const { return sampler_->dropped(); }

uint32_t SamplingCollector::FrameId(trace_format::TraceWriter* writer,
                                    uint64_t address, bool leaf) {
  // Return addresses point after the call; the caller's line is before.
  const uint64_t key = leaf ? address : address - 1;
  auto it = frames_.find(key);
  if (it != frames_.end()) return it->second;
  const sampling::Frame f = leaf ? symbolizer_.Symbolize(address)
                                 : symbolizer_.SymbolizeReturnAddress(address);
  trace_format::proto::Frame frame;
  frame.set_function_name(writer->InternString(f.function));
  frame.set_module_name(writer->InternString(f.module));
  frame.set_module_offset(f.module_offset);
  const uint32_t id = writer->AddFrame(frame);
  frames_.emplace(key, id);
  return id;
}

void SamplingCollector::Drain(trace_format::TraceWriter* writer,
                              const ClockSkew& skew,
                              const std::function<uint32_t(pid_t)>& track_of,
                              const std::function<bool(int64_t)>& accept) {
  RegisterProcessThreads();
  std::vector<uint32_t> frame_ids;
  sampler_->Drain([&](const sampling::StackSample& s) {
    if (accept && !accept(s.monotonic_ns)) return;
    const uint32_t track = track_of(s.tid);
    if (track == 0 || s.depth == 0) return;
    frame_ids.clear();
    for (uint32_t i = 0; i < s.depth; ++i) {
      frame_ids.push_back(FrameId(writer, s.ips[i], i == 0));
    }
    const std::string key(reinterpret_cast<const char*>(frame_ids.data()),
                          frame_ids.size() * sizeof(uint32_t));
    uint32_t& stack = stacks_[key];
    if (stack == 0) stack = writer->AddStack(frame_ids);
    writer->AddSample(track, skew.Apply(s.monotonic_ns), stack);
  });
}

}  // namespace podscope::profiler::internal
