// Lines up hosts whose traces carry their own wall clocks (XProf workers,
// which offer no clock probe; XSpace run folders and Kineto files of
// several hosts, imported) on one clock: the capture client's, or, for an
// import, one of the hosts'.
//
// Every host's offset maps its clock to the client's: reference = host +
// offset. Three methods, from weakest to strongest:
//  - wallclock: the host's Unix epoch clock is taken to be the client's
//    (offset = the client's monotonic minus realtime); its error is
//    whatever NTP left, which nothing here can state.
//  - rpc: every event of the host's trace happened while the Profile call
//    was open, between the request leaving and the response arriving, so
//    the offset lies in [sent - first event start, received - last event
//    end]. The interval is a bound, never an estimate.
//  - collectives: collective ops seen on every host (same key: step and op
//    name, or a collective id) end at nearly the same instant everywhere;
//    the median of the end differences against a reference host gives
//    each host's offset to it, and the intersection of every host's rpc
//    interval, moved by those offsets, anchors the reference.
#ifndef PODSCOPE_TRACE_FORMAT_HOST_ALIGNMENT_H_
#define PODSCOPE_TRACE_FORMAT_HOST_ALIGNMENT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {

enum class AlignMethod { kBest, kWallclock, kRpc, kCollectives };

std::string_view AlignMethodName(AlignMethod m);
absl::StatusOr<AlignMethod> ParseAlignMethod(std::string_view name);

struct AlignInput {
  // The client's CLOCK_MONOTONIC minus its CLOCK_REALTIME.
  int64_t wallclock_offset_ns = 0;
  // The rpc interval; lo > hi when the trace does not fit in the call.
  bool has_rpc = false;
  int64_t rpc_lo_ns = 0;
  int64_t rpc_hi_ns = 0;
  // Collective ends on the host's clock, by key; a key at most once.
  // Every time here within [0, 2^62) ns (AlignInputOf drops others), so
  // that differences cannot overflow.
  std::vector<std::pair<std::string, int64_t>> collective_ends;
};

struct HostAlignment {
  AlignMethod method = AlignMethod::kWallclock;
  int64_t offset_ns = 0;
  // Bound on the error of offset_ns; -1: not known (wallclock).
  int64_t uncertainty_ns = -1;
  // For collectives: bound on the error of this host's offset relative to
  // the reference host's (0 for the reference itself); what lining hosts
  // up depends on. Otherwise equal to uncertainty_ns.
  int64_t relative_uncertainty_ns = -1;
  int collectives = 0;  // the collectives the fit used
  std::string note;     // why a stronger method was not used
};

struct AlignOptions {
  AlignMethod method = AlignMethod::kBest;
  // How far apart the ends of one collective may be on two hosts, as
  // assumed: the floor of every collective-based uncertainty.
  int64_t collective_skew_ns = 1000;
  // Fewer collectives common to every host than this: no fit.
  int min_collectives = 3;
  // Hosts without call times (an import of files written by each host):
  // the collective fit is anchored on the first host that has
  // collectives, whose own clock is then the reference (its offset 0, its
  // uncertainty 0; every other host's uncertainty is relative to it).
  // Hosts left out of the fit keep their wall clock as it is.
  bool anchor_on_first_host = false;
  // A fit in which some host's offset is known only to worse than this is
  // refused (0: any is kept). Collectives that agree so little were not
  // the same ones on every host (a sampled or partial trace), and the
  // hosts' own clocks are then the better guess.
  int64_t max_uncertainty_ns = 0;
};

// What an import accepts from a collective fit: beyond a millisecond,
// hosts' wall clocks (NTP, within a data centre) are usually closer.
inline constexpr int64_t kMaxImportAlignUncertaintyNs = 1'000'000;

// One alignment per host, in order.
std::vector<HostAlignment> AlignHosts(const std::vector<AlignInput>& hosts,
                                      const AlignOptions& options = {});

// The fit an import makes for the hosts of a run of several files: each
// host's offset to the first host's clock by the collectives they all ran
// (anchor_on_first_host, refused beyond kMaxImportAlignUncertaintyNs), as
// the clock offset its file records, named `reference` (local time 0: one
// offset for the whole trace). Empty for fewer than two hosts, or when the
// fit does not cover every host (a run half on one clock and half on
// another lines up nothing).
std::vector<proto::ClockOffset> AlignImportedHosts(
    const std::vector<AlignInput>& hosts, const std::string& reference);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_HOST_ALIGNMENT_H_
