// Internal to trace_format: the inflater for what the writer's Huffman-only
// deflate (huffman_deflate.h) writes, several times faster than zlib's
// inflate on it. It only claims streams it reads in full; anything else is
// left to zlib, which also names any damage.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_HUFFMAN_INFLATE_H_
#define PODSCOPE_TRACE_FORMAT_SRC_HUFFMAN_INFLATE_H_

#include <cstddef>
#include <cstdint>

namespace podscope::trace_format {

// Inflates the raw deflate stream in[0, in_size) into out[0, size) when it
// is made only of stored blocks and dynamic Huffman blocks of literals
// whose codes zlib would accept, and inflates to exactly `size` bytes.
// Returns false otherwise (a length code, a fixed-code block, a code zlib
// rejects, a stream that ends early or inflates to another size), with
// out's contents unspecified: the caller then inflates with zlib. Reads
// nothing outside `in`, writes nothing outside out[0, size), and takes
// time linear in in_size + size.
bool InflateHuffmanLiterals(const uint8_t* in, size_t in_size, uint8_t* out,
                            size_t size);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_HUFFMAN_INFLATE_H_
