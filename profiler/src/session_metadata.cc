#include "src/session_metadata.h"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "podscope/profiler/flight_recorder.h"
#include "src/session_internal.h"

namespace podscope::profiler {
namespace internal {
namespace {

namespace tf = ::podscope::trace_format;

std::vector<std::string> CommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  return args;
}

}  // namespace

ProcessFacts& Facts() {
  static auto* facts = new ProcessFacts();
  return *facts;
}

uint64_t FactsGeneration() {
  ProcessFacts& f = Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  return f.generation;
}

tf::proto::Metadata RecordingMetadata(const TraceOptions& options,
                                      const RecordingClock& clock,
                                      uint64_t* facts_generation) {
  tf::proto::Metadata m;
  m.set_host(HostName());
  m.set_pid(getpid());
  {
    ProcessFacts& f = Facts();
    std::lock_guard<std::mutex> lock(f.mutex);
    m.set_process_index(f.process_index);
    m.set_process_count(f.process_count);
    m.set_session_id(options.session_id.empty() ? f.session_id
                                                : options.session_id);
    for (const auto& d : f.devices) *m.add_devices() = d;
    for (const auto& [key, value] : f.attributes) {
      (*m.mutable_attributes())[key] = value;
    }
    *facts_generation = f.generation;
  }
  for (const std::string& arg : CommandLine()) m.add_command_line(arg);
  const ClockSkew& skew = clock.skew;
  m.set_start_monotonic_ns(skew.Apply(clock.start_ns));
  m.set_start_realtime_ns(clock.start_realtime_ns);
  m.set_producer("podscope profiler 0.1.0");
  const TickCalibration file_clock = Skewed(clock.calibration, skew);
  tf::proto::TscCalibration* tsc = m.mutable_tsc();
  tsc->set_tsc_base(file_clock.tick_base);
  tsc->set_monotonic_base_ns(file_clock.ns_base);
  tsc->set_ns_per_tick(file_clock.ns_per_tick);
  tsc->set_invariant_tsc(clock.calibration.tsc);
  auto& opts = *m.mutable_capture_options();
  opts["level"] = absl::StrCat(static_cast<int>(options.level));
  opts["flush_interval_ms"] = absl::StrCat(options.flush_interval.count());
  opts["max_blocks_per_thread"] = absl::StrCat(options.max_blocks_per_thread);
  opts["max_blocks_total"] = absl::StrCat(options.max_blocks_total);
  opts["sampling_hz"] = absl::StrCat(options.sampling_hz);
  opts["clock"] = clock.calibration.tsc ? "tsc" : "clock_gettime";
  if (skew.active()) {
    opts["test_clock_offset_ns"] = absl::StrCat(skew.offset_ns);
    opts["test_clock_drift_ppm"] = absl::StrCat(skew.drift_ppm);
  }
  return m;
}

std::string HostNameForFiles() { return HostName(); }

std::string UtcSessionId(bool with_millis) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  if (!with_millis) return buf;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      now.time_since_epoch())
                      .count() %
                  1000;
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03d", static_cast<int>(ms));
  return std::string(buf) + frac;
}

ProcessFactsSnapshot SnapshotProcessFacts() {
  ProcessFacts& f = Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  return {f.process_index, f.process_count, f.session_id, f.devices};
}

}  // namespace internal

void SetProcessInfo(int process_index, int process_count) {
  {
    internal::ProcessFacts& f = internal::Facts();
    std::lock_guard<std::mutex> lock(f.mutex);
    f.process_index = process_index;
    f.process_count = process_count;
    ++f.generation;
  }
  // A job's ranks say who they are here: where the launcher's
  // $PODSCOPE_FLIGHT_RECORDER takes effect.
  if (absl::Status s = StartFlightRecorderFromEnv(); !s.ok()) {
    std::fprintf(stderr, "podscope: flight recorder not started: %s\n",
                 std::string(s.message()).c_str());
  }
}

void SetSessionId(const std::string& session_id) {
  internal::ProcessFacts& f = internal::Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.session_id = session_id;
  ++f.generation;
}

void AddDevice(const trace_format::proto::Device& device) {
  internal::ProcessFacts& f = internal::Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.devices.push_back(device);
  ++f.generation;
}

void SetMetadataAttribute(const std::string& key, const std::string& value) {
  internal::ProcessFacts& f = internal::Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.attributes[key] = value;
  ++f.generation;
}

}  // namespace podscope::profiler
