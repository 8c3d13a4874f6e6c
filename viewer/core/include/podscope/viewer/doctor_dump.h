// A job doctor's dump folder (docs/doctor.md, "The journal on disk"): each
// rank's collective journal (<host>.<pid>.journal.json) beside its flight
// recorder's trace. The journals say which verdict made the ranks write,
// which collective each rank was in and where the rank the verdict names
// was; this reads them (every file checked against the format's limits, so
// a damaged or hostile file is refused with a reason naming it) and turns
// them into marks on the session's timeline.
//
// Qt-free: the viewer draws the marks, `podscope analyze` prints them.
#ifndef PODSCOPE_VIEWER_DOCTOR_DUMP_H_
#define PODSCOPE_VIEWER_DOCTOR_DUMP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

// What a journal file may hold; beyond these it is refused.
struct JournalLimits {
  static constexpr size_t kMaxFileBytes = size_t{4} << 20;
  static constexpr int kMaxVersion = 1;
  static constexpr size_t kMaxEntries = 1024;
  static constexpr size_t kMaxScopes = 16;
  static constexpr size_t kMaxString = 1024;
  static constexpr size_t kMaxSentence = 8192;
  // Journal files read from one folder.
  static constexpr size_t kMaxFiles = 4096;
};

struct JournalCallEntry {
  std::string group;
  int64_t sequence = -1;
  std::string kind;  // "all_reduce", ...
  std::string dtype;
  int64_t count = -1;
  std::string op;
  int64_t root = -1;
  std::vector<std::string> scopes;
  int64_t tid = 0;
  int64_t entered_ns = 0;
  int64_t finished_ns = 0;  // 0: still in flight when written
  bool ok = true;
};

// Where the rank's issuing thread was when it wrote the journal.
struct JournalWhere {
  int64_t tid = 0;
  bool main_thread = false;
  std::vector<std::string> scopes;
  int64_t innermost_since_ns = 0;  // 0: no open scope
  int64_t last_event_ns = 0;
};

struct JournalVerdict {
  std::string kind;  // "stalled", "desynced", "dead"; "" when none
  std::string sentence;
  int64_t rank = -1;  // the rank it names
  std::string group;
  int64_t sequence = -1;
};

struct RankJournal {
  std::string path;
  int version = 0;
  int64_t rank = -1;
  int64_t pid = 0;
  std::string host;
  int64_t written_ns = 0;  // job clock; 0 in files before version 1
  JournalVerdict verdict;
  std::optional<JournalWhere> where;
  std::vector<JournalCallEntry> entries;  // oldest first
};

// Parses one journal file's text; the error names `path` and what was
// wrong (not JSON, a field of the wrong type, a limit exceeded, a newer
// version).
absl::StatusOr<RankJournal> ParseJournal(std::string_view text,
                                         const std::string& path);

struct DoctorDump {
  std::vector<RankJournal> journals;  // by rank
  // One line per file that could not be read: "<path>: <why>".
  std::vector<std::string> problems;
};

// Reads every *.journal.json of `dir`; nullopt when it has none (not a
// doctor's dump).
std::optional<DoctorDump> ReadDoctorDump(const std::string& dir);

enum class DoctorMarkKind {
  kCollective,  // a rank inside (or through) the verdict's collective
  kWhere,       // the rank the verdict names: the scope it was in
};

struct DoctorMark {
  DoctorMarkKind kind = DoctorMarkKind::kCollective;
  int64_t rank = -1;
  ProcessId process = 0;
  // The thread's track in the process, when the store has it.
  std::optional<TrackId> track;
  int64_t start_ns = 0;  // the store's clock
  int64_t end_ns = 0;
  // "all_reduce #3 of world: waiting for 2.1 s, from train_step >
  // backward > grad_sync" / "in train_step > data_loading > read_batch for
  // 2.3 s"
  std::string label;
};

struct DoctorView {
  JournalVerdict verdict;  // kind "" when no journal holds one
  size_t journals = 0;
  std::vector<DoctorMark> marks;  // by rank, collective before where
  // Files that could not be read and ranks whose trace is not in the
  // store, one line each.
  std::vector<std::string> problems;
  // The time span of the marks; nullopt without marks.
  std::optional<std::pair<int64_t, int64_t>> span() const;
};

// The verdict the dump was written for (the latest any journal holds) and
// its marks on `store`'s processes, matched to the journals by host and
// pid (else by rank): each rank's entry for the verdict's collective, from
// its entry to its end or to when the rank wrote its journal, and for the
// rank the verdict names, the scope its issuing thread was in, from when
// it entered it until then.
DoctorView BuildDoctorView(const DoctorDump& dump, const TraceStore& store);

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_DOCTOR_DUMP_H_
