// Folding with carry-less multiplication, as in Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel,
// 2009), for the bit-reflected gzip polynomial 0x1DB710641. The constants
// are x^k mod P for the fold distances (reflected), and for the final
// Barrett reduction floor(x^64 / P) and P itself.
#include "crc32.h"

#include <zlib.h>

#include <algorithm>

#include "podscope/base/cpu_dispatch.h"

#if PODSCOPE_HAVE_X86V3
#include <immintrin.h>
#endif

namespace podscope::trace_format {
namespace {

uint32_t ZlibCrc32(uint32_t crc, const unsigned char* p, size_t n) {
  uLong c = crc;
  while (n > 0) {
    // crc32() takes a uInt length.
    const size_t step = std::min<size_t>(n, 1u << 30);
    c = crc32(c, p, static_cast<uInt>(step));
    p += step;
    n -= step;
  }
  return static_cast<uint32_t>(c);
}

#if PODSCOPE_HAVE_X86V3

#define PODSCOPE_CLMUL __attribute__((target("pclmul,sse4.1")))

// x * (k_low, k_high) folded onto `next`.
PODSCOPE_CLMUL inline __m128i Fold(__m128i x, __m128i k, __m128i next) {
  const __m128i low = _mm_clmulepi64_si128(x, k, 0x00);
  const __m128i high = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

PODSCOPE_CLMUL inline __m128i Load(const unsigned char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// The CRC register (not inverted) after `n` bytes, n a multiple of 16 and
// at least 64.
PODSCOPE_CLMUL uint32_t FoldCrc(uint32_t crc, const unsigned char* p,
                                size_t n) {
  const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
  const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
  const __m128i poly = _mm_set_epi64x(0x1f7011641, 0x1db710641);
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  __m128i x1 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x2 = Load(p + 16), x3 = Load(p + 32), x4 = Load(p + 48);
  p += 64;
  n -= 64;
  for (; n >= 64; p += 64, n -= 64) {
    x1 = Fold(x1, k1k2, Load(p));
    x2 = Fold(x2, k1k2, Load(p + 16));
    x3 = Fold(x3, k1k2, Load(p + 32));
    x4 = Fold(x4, k1k2, Load(p + 48));
  }
  x1 = Fold(x1, k3k4, x2);
  x1 = Fold(x1, k3k4, x3);
  x1 = Fold(x1, k3k4, x4);
  for (; n >= 16; p += 16, n -= 16) x1 = Fold(x1, k3k4, Load(p));
  // 128 bits to 64, then to 32 with the zeros the CRC appends.
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8),
                     _mm_clmulepi64_si128(k3k4, x1, 0x01));
  const __m128i rest = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00),
                     rest);
  // Barrett reduction to 32 bits.
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly, 0x00);
  x1 = _mm_xor_si128(x1, t);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

// Every x86-64-v3 processor has PCLMULQDQ; the check keeps this true of
// emulators too.
bool HavePclmul() {
  static const bool have =
      base::UseX86V3() && __builtin_cpu_supports("pclmul") != 0;
  return have;
}

#endif

}  // namespace

uint32_t Crc32(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
#if PODSCOPE_HAVE_X86V3
  if (n >= 256 && HavePclmul()) {
    const size_t folded = n & ~size_t{15};
    crc = ~FoldCrc(~crc, p, folded);
    p += folded;
    n -= folded;
  }
#endif
  return ZlibCrc32(crc, p, n);
}

}  // namespace podscope::trace_format
