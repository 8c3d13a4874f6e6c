// Platform choice and device topology from options and the environment.

#include <algorithm>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::runtime {
namespace {

// An environment variable, or nullopt when unset or empty.
std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

absl::Status CheckPlatform(const std::string& platform,
                           const std::string& source) {
  const std::vector<std::string> available = AvailablePlatforms();
  if (std::find(available.begin(), available.end(), platform) !=
      available.end()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("Unknown platform '", platform, "'", source,
                   "; available platforms: ", absl::StrJoin(available, ", ")));
}

}  // namespace

std::vector<std::string> AvailablePlatforms() { return {"CPU"}; }

absl::StatusOr<ClientOptions> ClientOptions::FromEnvironment() {
  ClientOptions options;
  std::string source = "";
  if (auto device = GetEnv("PODSCOPE_DEVICE")) {
    options.platform = absl::AsciiStrToUpper(*device);
    source = " (from PODSCOPE_DEVICE)";
  } else if (auto pjrt = GetEnv("PJRT_DEVICE")) {
    options.platform = absl::AsciiStrToUpper(*pjrt);
    source = " (from PJRT_DEVICE)";
  }
  PODSCOPE_RETURN_IF_ERROR(CheckPlatform(options.platform, source));

  if (auto count = GetEnv("CPU_NUM_DEVICES")) {
    int value = 0;
    if (!absl::SimpleAtoi(*count, &value) || value < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CPU_NUM_DEVICES must be a positive integer, got '", *count, "'"));
    }
    options.num_devices = value;
  }
  if (auto visible = GetEnv("PODSCOPE_VISIBLE_DEVICES")) {
    for (absl::string_view item :
         absl::StrSplit(*visible, ',', absl::SkipWhitespace())) {
      int id = 0;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(item), &id)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "PODSCOPE_VISIBLE_DEVICES must be a comma-separated list of "
            "device ids, got '",
            *visible, "'"));
      }
      options.visible_devices.push_back(id);
    }
  }
  return options;
}

absl::StatusOr<Topology> LocalTopology(const ClientOptions& options) {
  PODSCOPE_RETURN_IF_ERROR(CheckPlatform(options.platform, ""));
  if (options.num_devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_devices (CPU_NUM_DEVICES) must be >= 1, got ",
                     options.num_devices));
  }
  std::vector<int> ids = options.visible_devices;
  if (ids.empty()) {
    for (int i = 0; i < options.num_devices; ++i) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= options.num_devices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PODSCOPE_VISIBLE_DEVICES lists device ", ids[i], ", but only ",
          options.num_devices, " ", options.platform, " devices exist (ids 0..",
          options.num_devices - 1, "; set CPU_NUM_DEVICES for more)"));
    }
    if (i > 0 && ids[i] == ids[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PODSCOPE_VISIBLE_DEVICES lists device ", ids[i], " twice"));
    }
  }
  Topology topology;
  for (int id : ids) {
    topology.devices.push_back(DeviceDescription{
        static_cast<int>(topology.devices.size()), 0, options.platform, id});
  }
  return topology;
}

}  // namespace podscope::runtime
