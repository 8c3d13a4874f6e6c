// Internal to trace_format: a raw deflate stream (RFC 1951) made of one
// dynamic Huffman table per block and no LZ77 matching, several times
// faster than zlib's Z_HUFFMAN_ONLY; any inflater reads it.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_HUFFMAN_DEFLATE_H_
#define PODSCOPE_TRACE_FORMAT_SRC_HUFFMAN_DEFLATE_H_

#include <cstddef>
#include <span>
#include <string_view>

namespace podscope::trace_format {

// Writes a raw deflate stream of `parts` (Huffman-coded, one table per
// block of at most 64 KiB of a part) then `stored` (stored blocks) at
// `out`, which has room for DeflatedBound(total bytes, parts + 1) bytes.
// Returns the stream's size.
size_t DeflateHuffmanParts(std::span<const std::string_view> parts,
                           std::string_view stored, char* out);

// The most bytes DeflateHuffmanParts writes for `bytes` of input in
// `pieces` pieces.
size_t DeflatedBound(size_t bytes, size_t pieces);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_HUFFMAN_DEFLATE_H_
