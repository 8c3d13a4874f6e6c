#ifndef PODSCOPE_RUNTIME_SRC_COLLECTIVES_JOURNAL_H_
#define PODSCOPE_RUNTIME_SRC_COLLECTIVES_JOURNAL_H_

// The collective journal (docs/doctor.md): every collective this process
// runs through a Communicator (host, buffer and tensor forms, the IR's
// all_reduce, SPMD's exchanges, barriers and rendezvous) gets an entry in a
// fixed ring, whether or not a trace is recorded: its group (the
// communicator's prefix) and sequence number (the trace's collective_id is
// "<group>#<sequence>"), kind, dtype, count, reduce op, root, the issuing
// thread's open scopes, and entered/finished times on the profiler clock.
// The job's heartbeat sends a summary (Snapshot); a doctor's verdict dumps
// the ring (ToJson).

#include <cstdint>
#include <string>
#include <string_view>

#include "podscope/job/doctor.h"

namespace podscope::runtime::internal {

// Where a collective was issued: the thread and its open scopes then.
// Device collectives are issued on one thread and run on a stream's.
struct IssueSite {
  static constexpr int kMaxScopes = 8;
  int64_t tid = 0;
  uint32_t scope_ids[kMaxScopes] = {};
  int depth = 0;
  // The calling thread, now.
  static IssueSite Here();
};

struct JournalCall {
  std::string_view group;  // the communicator's prefix
  int group_size = 0;      // the communicator's world size
  uint64_t sequence = 0;
  std::string_view kind;   // a literal, e.g. "AllReduce"
  std::string_view dtype;  // a literal, "" when none
  int64_t count = -1;
  std::string_view op;  // a literal, "" when none
  int root = -1;
};

class CollectiveJournal {
 public:
  static constexpr int kRingEntries = 1024;
  // Durations kept per group and kind for the median.
  static constexpr int kDurations = 15;

  static CollectiveJournal& Get();

  // Records `call` as entered now; returns the token Finish takes.
  uint64_t Enter(const JournalCall& call, const IssueSite& site);
  void Finish(uint64_t token, bool ok);
  // The rank's current step (the largest a lazy context has ended), sent
  // with the heartbeat.
  void NoteStep(int64_t step);

  // The rank's state for its heartbeat, times moved onto the job clock
  // (+offset_ns); the issuer is the thread of the last collective entered,
  // or the main thread.
  job::RankState Snapshot(int64_t offset_ns) const;
  // What a journal file says besides the ring (docs/doctor.md, "The
  // journal on disk"): who wrote it, when, the verdict that made it write
  // and where the rank's issuing thread is now.
  struct FileHeader {
    int rank = -1;
    std::string_view host;
    const job::Verdict* verdict = nullptr;
    const job::RankState* now = nullptr;  // its issuer and taken_ns
  };
  // The journal file's format version; a reader refuses a newer one.
  static constexpr int kFileVersion = 1;
  // Every string of the file is cut to this many bytes.
  static constexpr size_t kMaxFileString = 256;
  // The whole ring, oldest first, as JSON (docs/doctor.md).
  std::string ToJson(int64_t offset_ns, const FileHeader& header) const;

  // "AllReduce" -> "all_reduce".
  static std::string KindName(std::string_view kind);

 private:
  CollectiveJournal() = default;
  struct Impl;
  Impl& impl() const;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_COLLECTIVES_JOURNAL_H_
