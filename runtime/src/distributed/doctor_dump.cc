// The job doctor's output on a rank: its journal on disk, rank 0's report.

#include "distributed/doctor_dump.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "collectives/journal.h"
#include "podscope/base/file_names.h"

namespace podscope::runtime::internal {

void WriteJournalFile(const std::string& dir, const std::string& host, int rank,
                      int64_t offset_ns, const job::Verdict& verdict) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = absl::StrCat(dir, "/", base::SafeFileComponent(host),
                                        ".", getpid(), ".journal.json");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    const CollectiveJournal& journal = CollectiveJournal::Get();
    // Where this rank's issuing thread is now: for the rank a stall names,
    // the scope the viewer marks (docs/doctor.md).
    const job::RankState now = journal.Snapshot(offset_ns);
    CollectiveJournal::FileHeader header;
    header.rank = rank;
    header.host = host;
    header.verdict = &verdict;
    header.now = &now;
    out << journal.ToJson(offset_ns, header);
    if (!out) {
      std::fprintf(stderr, "podscope: rank %d: cannot write %s\n", rank,
                   tmp.c_str());
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::fprintf(stderr, "podscope: rank %d: cannot write %s: %s\n", rank,
                 path.c_str(), ec.message().c_str());
  }
}

void PrintVerdict(const job::Verdict& verdict) {
  if (verdict.kind == job::VerdictKind::kHealthy) {
    std::fprintf(stderr, "podscope: job doctor: the job moves again\n");
  } else {
    std::fprintf(stderr, "podscope: job doctor: %s\n",
                 verdict.sentence.c_str());
  }
  std::fflush(stderr);
}

}  // namespace podscope::runtime::internal
