// CRC-32 as zlib's crc32() computes it (the gzip polynomial), faster on
// long inputs: processors with carry-less multiplication (PCLMULQDQ) fold
// 64 bytes a step; others, and short inputs, use zlib.
//
// Contract: Crc32(crc, data, n) == crc32(crc, data, n) for every input,
// including chained calls; n may exceed 4 GiB.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_CRC32_H_
#define PODSCOPE_TRACE_FORMAT_SRC_CRC32_H_

#include <cstddef>
#include <cstdint>

namespace podscope::trace_format {

uint32_t Crc32(uint32_t crc, const void* data, size_t n);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_CRC32_H_
