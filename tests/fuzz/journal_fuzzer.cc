// libFuzzer target for the job doctor's journal reader (viewer/core's
// doctor_dump.h): arbitrary bytes as a <host>.<pid>.journal.json must be
// refused with an error naming the file or read within the format's
// limits; never a crash or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "podscope/viewer/doctor_dump.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podscope::viewer;
  auto j = ParseJournal(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!j.ok()) {
    if (j.status().message().substr(0, 6) != "fuzz: ") __builtin_trap();
    return 0;
  }
  if (j->entries.size() > JournalLimits::kMaxEntries) __builtin_trap();
  for (const JournalCallEntry& e : j->entries) {
    if (e.scopes.size() > JournalLimits::kMaxScopes) __builtin_trap();
    if (e.finished_ns != 0 && e.finished_ns < e.entered_ns) __builtin_trap();
  }
  if (j->where && j->where->scopes.size() > JournalLimits::kMaxScopes) {
    __builtin_trap();
  }
  return 0;
}
