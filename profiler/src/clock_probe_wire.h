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

#include "podscope/profiler/clock.h"

namespace podscope::profiler::internal {

inline constexpr char kProbeRequestMagic[8] = {'P', 'S', 'P', 'R',
                                               'O', 'B', 'E', '1'};
inline constexpr char kProbeReplyMagic[8] = {'P', 'S', 'P', 'R',
                                             'O', 'B', 'R', '1'};
inline constexpr size_t kProbeKeyBytes = 16;
inline constexpr size_t kProbePacketBytes = 40;

inline void PutI64(char* p, int64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}
inline int64_t GetI64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return static_cast<int64_t>(v);
}

inline int64_t RealtimeNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The CLOCK_MONOTONIC time of a datagram from its kernel receive timestamp
// (CLOCK_REALTIME) in `msg`'s control data; `fallback` when there is none.
inline int64_t ReceiveMonotonicNs(const msghdr& msg, int64_t fallback) {
  for (cmsghdr* c = CMSG_FIRSTHDR(const_cast<msghdr*>(&msg)); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      const int64_t kernel_real =
          int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
      // How long ago it arrived, on the realtime clock, taken back from now
      // on the monotonic one.
      const int64_t mono = MonotonicNs();
      const int64_t real = RealtimeNowNs();
      const int64_t age = real - kernel_real;
      if (age < 0 || age > 1'000'000'000) return fallback;
      return mono - age;
    }
  }
  return fallback;
}

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CLOCK_PROBE_WIRE_H_
