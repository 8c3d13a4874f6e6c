// Where the threads' event blocks live: 2 MiB chunks of address space,
// each holding Block-sized pieces back to back, aligned to their size so
// that a piece finds its chunk by masking its address.
//
// Why: the first write to a fresh 4 KiB page is a page fault, and on the
// virtual machines this runs on one fault costs about 9 us, so a burst
// that writes 1 GB/s into fresh pages spends a third of its time
// faulting. Whoever asks for a `populated` block (the session's drain or
// stocking thread, ahead of a burst) pays for the faults of its pages; a
// recording thread that runs out of stock takes a block as it is.
//
// Chunks are not advised for transparent huge pages: in a training process
// on a machine whose memory is busy (a build beside it), a profiler holding
// a few huge pages made the program's own compute threads up to a quarter
// slower, and the stock ahead already keeps the faults off the recording
// thread (docs/profiler.md).
//
// Freed blocks return their memory. A chunk with no live block is kept
// for the next burst, up to `retained_chunks` of them, its pages marked
// free for the kernel to take whenever it needs them (MADV_FREE): until it
// does, writing them again costs no fault. Beyond that cap a free chunk is
// unmapped. A freed block inside a chunk that still has live ones stays
// mapped for the next Allocate until ReleaseFreePieces gives its pages back
// (MADV_DONTNEED; a session's end). All calls are thread-safe (one mutex;
// every call is on a slow path: a block holds 2,048 events).
#ifndef PODSCOPE_PROFILER_SRC_BLOCK_ARENA_H_
#define PODSCOPE_PROFILER_SRC_BLOCK_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace podscope::profiler::internal {

class BlockArena {
 public:
  static constexpr size_t kChunkBytes = size_t{2} << 20;

  // `piece_bytes` (a multiple of 64, at most a chunk) is the size of what
  // Allocate returns.
  BlockArena(size_t piece_bytes, size_t retained_chunks);
  ~BlockArena();
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;

  // Memory for one piece, 64-byte aligned, uninitialised; nullptr when the
  // system has none. With `populated`, its pages are mapped before it is
  // returned (the whole chunk when the piece is the first of a fresh one).
  void* Allocate(bool populated);
  // Gives back what Allocate returned.
  void Free(void* piece);
  // Gives the pages of the freed pieces of chunks still in use back to the
  // system.
  void ReleaseFreePieces();

  // Pieces handed out and not freed, and chunks mapped now (tests).
  size_t live_pieces() const;
  size_t mapped_chunks() const;
  size_t retained_chunks() const;
  size_t pieces_per_chunk() const { return per_chunk_; }

 private:
  struct Chunk {
    uint32_t carved = 0;  // pieces handed out at least once, from the start
    uint32_t live = 0;
    // Pieces given back, by index; kReleased marks those whose pages went
    // back to the system.
    std::vector<uint32_t> freed;
  };
  static constexpr uint32_t kReleased = 0x80000000u;
  char* MapChunk();
  void Populate(char* begin, size_t bytes);

  const size_t piece_bytes_;
  const uint32_t per_chunk_;
  const size_t max_retained_;
  mutable std::mutex mutex_;
  absl::flat_hash_map<uintptr_t, Chunk> chunks_;  // by base address
  // The chunk new pieces are carved from (0: none), and chunks holding
  // freed pieces to hand out again.
  uintptr_t carving_ = 0;
  std::vector<uintptr_t> with_freed_;
  std::vector<char*> retained_;  // free chunks kept mapped (MADV_FREE)
  size_t live_ = 0;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_BLOCK_ARENA_H_
