// The blocks' arena on its own: pieces carved from 2 MiB chunks, their
// pages mapped when asked, given back when freed, and free chunks kept for
// the next burst only up to the cap.
#include "src/block_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace podscope::profiler::internal {
namespace {

constexpr size_t kPiece = 49344;  // a thread buffer's block
constexpr size_t kPage = 4096;

// How many of the whole pages inside [p, p + bytes) are resident.
size_t ResidentPages(const void* p, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kPage - 1) & ~(kPage - 1);
  const uintptr_t last = (begin + bytes) & ~(kPage - 1);
  if (last <= first) return 0;
  std::vector<unsigned char> in_core((last - first) / kPage);
  if (mincore(reinterpret_cast<void*>(first), last - first, in_core.data()) !=
      0) {
    return 0;
  }
  size_t n = 0;
  for (unsigned char c : in_core) n += c & 1;
  return n;
}

size_t WholePages(const void* p, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kPage - 1) & ~(kPage - 1);
  const uintptr_t last = (begin + bytes) & ~(kPage - 1);
  return last > first ? (last - first) / kPage : 0;
}

TEST(BlockArena, PiecesAreAlignedDistinctAndInsideTheirChunk) {
  BlockArena arena(kPiece, 0);
  ASSERT_EQ(arena.pieces_per_chunk(), BlockArena::kChunkBytes / kPiece);
  const size_t n = 2 * arena.pieces_per_chunk() + 3;  // three chunks
  std::vector<char*> pieces;
  std::set<uintptr_t> chunks;
  for (size_t i = 0; i < n; ++i) {
    auto* p = static_cast<char*>(arena.Allocate(i % 2 == 0));
    ASSERT_NE(p, nullptr);
    const auto address = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(address % 64, 0u);
    const uintptr_t chunk = address & ~(BlockArena::kChunkBytes - 1);
    // The whole piece lies in one chunk.
    EXPECT_LE(address + kPiece, chunk + BlockArena::kChunkBytes);
    chunks.insert(chunk);
    std::memset(p, static_cast<int>(i), kPiece);
    pieces.push_back(p);
  }
  EXPECT_EQ(chunks.size(), 3u);
  EXPECT_EQ(arena.mapped_chunks(), 3u);
  EXPECT_EQ(arena.live_pieces(), n);
  // No piece overlaps another: each still holds what was written into it.
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(pieces[i][0], static_cast<char>(i));
    EXPECT_EQ(pieces[i][kPiece - 1], static_cast<char>(i));
  }
  for (char* p : pieces) arena.Free(p);
  EXPECT_EQ(arena.live_pieces(), 0u);
  // With no chunk to keep, every chunk went back to the system.
  EXPECT_EQ(arena.mapped_chunks(), 0u);
}

TEST(BlockArena, APopulatedPieceIsResidentAndAFreedOneIsNot) {
  BlockArena arena(kPiece, 0);
  void* keep = arena.Allocate(true);
  void* piece = arena.Allocate(true);
  ASSERT_NE(keep, nullptr);
  ASSERT_NE(piece, nullptr);
  EXPECT_EQ(ResidentPages(piece, kPiece), WholePages(piece, kPiece));
  // Its chunk still has a live piece: the freed piece stays mapped until
  // the arena is told to release, then only its pages go.
  arena.Free(piece);
  EXPECT_EQ(ResidentPages(piece, kPiece), WholePages(piece, kPiece));
  arena.ReleaseFreePieces();
  EXPECT_EQ(ResidentPages(piece, kPiece), 0u);
  EXPECT_EQ(ResidentPages(keep, kPiece), WholePages(keep, kPiece));
  // Handed out again, populated: resident again, and writable.
  void* again = arena.Allocate(true);
  EXPECT_EQ(again, piece);
  EXPECT_EQ(ResidentPages(again, kPiece), WholePages(again, kPiece));
  std::memset(again, 7, kPiece);
  arena.Free(again);
  arena.Free(keep);
  EXPECT_EQ(arena.mapped_chunks(), 0u);
}

TEST(BlockArena, FreeChunksAreKeptUpToTheCapAndUsedAgain) {
  constexpr size_t kCap = 2;
  BlockArena arena(kPiece, kCap);
  const size_t n = 4 * arena.pieces_per_chunk();  // four chunks
  std::vector<void*> pieces;
  for (size_t i = 0; i < n; ++i) pieces.push_back(arena.Allocate(true));
  EXPECT_EQ(arena.mapped_chunks(), 4u);
  for (void* p : pieces) arena.Free(p);
  // Two kept for the next burst, two unmapped.
  EXPECT_EQ(arena.retained_chunks(), kCap);
  EXPECT_EQ(arena.mapped_chunks(), kCap);
  // The next burst takes the kept chunks before mapping new ones.
  std::set<uintptr_t> before;
  for (void* p : pieces) {
    before.insert(reinterpret_cast<uintptr_t>(p) &
                  ~(BlockArena::kChunkBytes - 1));
  }
  std::vector<void*> next;
  for (size_t i = 0; i < kCap * arena.pieces_per_chunk(); ++i) {
    next.push_back(arena.Allocate(true));
    std::memset(next.back(), 1, kPiece);
  }
  EXPECT_EQ(arena.retained_chunks(), 0u);
  EXPECT_EQ(arena.mapped_chunks(), kCap);
  for (void* p : next) {
    EXPECT_TRUE(before.count(reinterpret_cast<uintptr_t>(p) &
                             ~(BlockArena::kChunkBytes - 1)));
  }
  for (void* p : next) arena.Free(p);
}

}  // namespace
}  // namespace podscope::profiler::internal
