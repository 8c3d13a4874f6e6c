#ifndef PODSCOPE_RUNTIME_SRC_DISTRIBUTED_DOCTOR_DUMP_H_
#define PODSCOPE_RUNTIME_SRC_DISTRIBUTED_DOCTOR_DUMP_H_

// What a rank writes and prints for the job doctor (docs/doctor.md).

#include <cstdint>
#include <string>

#include "podscope/job/doctor.h"

namespace podscope::runtime::internal {

// Writes this process's collective journal, times on the job clock
// (+offset_ns), to <dir>/<host>.<pid>.journal.json (through a temporary
// file, so a reader never sees half of it); reports a failure on stderr.
void WriteJournalFile(const std::string& dir, const std::string& host, int rank,
                      int64_t offset_ns, const job::Verdict& verdict);

// Rank 0's report of a verdict (or of its end) on stderr, for the launcher.
void PrintVerdict(const job::Verdict& verdict);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_DISTRIBUTED_DOCTOR_DUMP_H_
