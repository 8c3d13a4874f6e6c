// The lean clock-probe path shared by the profiler server and the capture
// client: one UDP datagram each way, answered by a dedicated thread, with
// receive times taken by the kernel (SO_TIMESTAMPNS) so that neither side's
// scheduling delay after the packet arrives enters the measurement.
//
// Request (40 bytes): magic "PSPROBE1", the 16-byte probe key the server
// hands out in GetInfo (only callers that passed its token learn it), the
// client's send time. Reply (40 bytes): magic "PSPROBR1", the client's
// send time echoed, the server's profiler clock at receive and at send.
// Integers are little-endian.
#ifndef PODSCOPE_PROFILER_SRC_CLOCK_PROBE_WIRE_H_
#define PODSCOPE_PROFILER_SRC_CLOCK_PROBE_WIRE_H_

#include <sys/socket.h>
#include <time.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "podscope/base/coding.h"
#include "podscope/base/time.h"
#include "podscope/profiler/clock.h"

namespace podscope::profiler::internal {

inline constexpr char kProbeRequestMagic[8] = {'P', 'S', 'P', 'R',
                                               'O', 'B', 'E', '1'};
inline constexpr char kProbeReplyMagic[8] = {'P', 'S', 'P', 'R',
                                             'O', 'B', 'R', '1'};
inline constexpr size_t kProbeKeyBytes = 16;
inline constexpr size_t kProbePacketBytes = 40;

// Times travel as little-endian two's complement (base/coding.h).
inline void PutI64(char* p, int64_t v) {
  base::EncodeFixed64(p, static_cast<uint64_t>(v));
}
inline int64_t GetI64(const char* p) {
  return static_cast<int64_t>(base::DecodeFixed64(p));
}

// The two clocks a kernel receive time is converted between; a seam for
// tests, which simulate a thread descheduled between the reads.
struct ClockReads {
  int64_t (*monotonic)() = &MonotonicNs;
  int64_t (*realtime)() = &base::RealtimeNs;
};

// The CLOCK_MONOTONIC time of kernel receive timestamp `kernel_real`
// (CLOCK_REALTIME), never earlier than the datagram really arrived:
// `fallback` (a monotonic read taken after the datagram was received) when
// that is sooner or the timestamp cannot be converted.
//
// The two clocks' difference is read with the monotonic read between two
// realtime reads, and the conversion takes the end of that bracket that
// errs late. Reading the monotonic clock first and the realtime one after
// (as this once did) errs early by however long the thread was away
// between the reads: a probe's receive times then come out before the
// datagrams arrived, its round trip shrinks toward zero or below, and the
// probe with the smallest round trip -- the one kept -- is the most wrong.
inline int64_t KernelReceiveToMonotonic(int64_t kernel_real, int64_t fallback,
                                        const ClockReads& clocks = {}) {
  constexpr int kTries = 4;
  constexpr int64_t kTightNs = 1'000;
  int64_t best_width = -1;
  int64_t mono_minus_real = 0;  // late end of the bracket
  for (int i = 0; i < kTries; ++i) {
    const int64_t r1 = clocks.realtime();
    const int64_t m = clocks.monotonic();
    const int64_t r2 = clocks.realtime();
    if (r2 < r1) continue;  // the realtime clock was set back meanwhile
    if (best_width < 0 || r2 - r1 < best_width) {
      best_width = r2 - r1;
      mono_minus_real = m - r1;
    }
    if (best_width <= kTightNs) break;
  }
  if (best_width < 0) return fallback;
  const int64_t age_limit = 1'000'000'000;
  const int64_t converted = kernel_real + mono_minus_real;
  // A realtime clock set between the stamp and now moves the conversion by
  // the step: more than a second away from the fallback, or after it, the
  // fallback is the better late bound.
  if (converted > fallback || fallback - converted > age_limit) {
    return fallback;
  }
  return converted;
}

// The CLOCK_MONOTONIC time of a datagram from its kernel receive timestamp
// in `msg`'s control data; `fallback` when there is none.
inline int64_t ReceiveMonotonicNs(const msghdr& msg, int64_t fallback) {
  for (cmsghdr* c = CMSG_FIRSTHDR(const_cast<msghdr*>(&msg)); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      return KernelReceiveToMonotonic(
          int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec, fallback);
    }
  }
  return fallback;
}

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CLOCK_PROBE_WIRE_H_
