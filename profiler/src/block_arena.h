// Where the threads' event blocks live: 2 MiB chunks of address space,
// aligned so that the kernel can back each with one huge page where it
// has them (MADV_HUGEPAGE; transparent huge pages in "always" or
// "madvise" mode). A chunk holds Block-sized pieces back to back.
//
// Why: the first write to a fresh 4 KiB page is a page fault, and on the
// virtual machines this runs on one fault costs about 9 us, so a burst
// that writes 1 GB/s into fresh 4 KiB pages spends a third of its time
// faulting. One 2 MiB page costs about 50 us for 512 times the memory.
// Whoever asks for a `populated` block (the session's drain thread, ahead
// of a burst) pays for the fault of its chunk; a recording thread that
// runs out of stock takes a block as it is.
//
// Freed blocks return their memory. A chunk with no live block is kept
// for the next burst, up to `retained_chunks` of them, its pages marked
// free for the kernel to take whenever it needs them (MADV_FREE): until it
// does, writing them again costs nothing, where mapping fresh memory costs
// the first write to each 2 MiB about 3 ms on the virtual machines this
// runs on. Beyond that cap a free chunk is unmapped. A freed block inside a
// chunk that still has live ones stays mapped for the next Allocate until
// ReleaseFreePieces gives its pages back (MADV_DONTNEED; a session's end):
// releasing them one by one as a chunk empties would split its huge page. All
// calls are thread-safe (one mutex; every call is on a slow path: a block holds
// 2,048 events).
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
