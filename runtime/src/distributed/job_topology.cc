// The job's devices for CreateClient (job_topology.h).

#include "distributed/job_topology.h"

#include <mutex>

#include "absl/strings/str_cat.h"

namespace podscope::runtime::internal {
namespace {

std::mutex& Mutex() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::optional<JobDevices>& Current() {
  static auto* current = new std::optional<JobDevices>();
  return *current;
}

}  // namespace

void SetJobDevices(std::optional<JobDevices> devices) {
  std::lock_guard<std::mutex> lock(Mutex());
  Current() = std::move(devices);
}

std::optional<JobDevices> GetJobDevices() {
  std::lock_guard<std::mutex> lock(Mutex());
  return Current();
}

absl::StatusOr<Topology> JobTopology(const Topology& local,
                                     const JobDevices& job) {
  const int count = static_cast<int>(job.devices_per_process.size());
  if (job.process_index < 0 || job.process_index >= count) {
    return absl::InternalError("job topology: process index out of range");
  }
  const int announced = job.devices_per_process[job.process_index];
  if (static_cast<int>(local.devices.size()) != announced) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this process joined the job with ", announced,
        " devices (CPU_NUM_DEVICES / PODSCOPE_VISIBLE_DEVICES at Job::Init), "
        "but the client asks for ",
        local.devices.size()));
  }
  Topology topology;
  topology.process_index = job.process_index;
  topology.process_count = count;
  for (int p = 0; p < count; ++p) {
    for (int d = 0; d < job.devices_per_process[p]; ++d) {
      DeviceDescription description;
      if (p == job.process_index) {
        description = local.devices[d];
      } else {
        description.kind =
            local.devices.empty() ? std::string("CPU") : local.devices[0].kind;
        description.local_hardware_id = d;
      }
      description.id = static_cast<int>(topology.devices.size());
      description.process_index = p;
      topology.devices.push_back(description);
    }
  }
  return topology;
}

}  // namespace podscope::runtime::internal
