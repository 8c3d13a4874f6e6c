#include "src/block_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace podscope::profiler::internal {

namespace {

constexpr size_t kPage = 4096;

uintptr_t ChunkOf(const void* p) {
  return reinterpret_cast<uintptr_t>(p) & ~(BlockArena::kChunkBytes - 1);
}

}  // namespace

BlockArena::BlockArena(size_t piece_bytes, size_t retained_chunks)
    : piece_bytes_(piece_bytes),
      per_chunk_(static_cast<uint32_t>(kChunkBytes / piece_bytes)),
      max_retained_(retained_chunks) {}

BlockArena::~BlockArena() {
  for (const auto& [base, chunk] : chunks_) {
    munmap(reinterpret_cast<void*>(base), kChunkBytes);
  }
  for (char* base : retained_) munmap(base, kChunkBytes);
}

char* BlockArena::MapChunk() {
  if (!retained_.empty()) {
    char* base = retained_.back();
    retained_.pop_back();
    return base;
  }
  // Twice the size, then the unaligned ends cut off: mmap aligns to pages
  // only.
  void* raw = mmap(nullptr, 2 * kChunkBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t base = (start + kChunkBytes - 1) & ~(kChunkBytes - 1);
  if (base > start) munmap(raw, base - start);
  const uintptr_t end = start + 2 * kChunkBytes;
  if (end > base + kChunkBytes) {
    munmap(reinterpret_cast<void*>(base + kChunkBytes),
           end - (base + kChunkBytes));
  }
  return reinterpret_cast<char*>(base);
}

void BlockArena::Populate(char* begin, size_t bytes) {
  // One write per page maps it.
  for (size_t offset = 0; offset < bytes; offset += kPage) {
    reinterpret_cast<volatile char*>(begin)[offset] = 0;
  }
  if (bytes > 0) reinterpret_cast<volatile char*>(begin)[bytes - 1] = 0;
}

void* BlockArena::Allocate(bool populated) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A freed piece first: its chunk is mapped already.
  while (!with_freed_.empty()) {
    auto it = chunks_.find(with_freed_.back());
    if (it == chunks_.end() || it->second.freed.empty()) {
      with_freed_.pop_back();
      continue;
    }
    Chunk& chunk = it->second;
    const uint32_t entry = chunk.freed.back();
    chunk.freed.pop_back();
    ++chunk.live;
    ++live_;
    char* piece = reinterpret_cast<char*>(it->first) +
                  (entry & ~kReleased) * piece_bytes_;
    if (populated && (entry & kReleased) != 0) Populate(piece, piece_bytes_);
    return piece;
  }
  auto it = chunks_.find(carving_);
  if (it == chunks_.end() || it->second.carved == per_chunk_) {
    char* base = MapChunk();
    if (base == nullptr) return nullptr;
    carving_ = reinterpret_cast<uintptr_t>(base);
    it = chunks_.emplace(carving_, Chunk()).first;
    if (populated) Populate(base, kChunkBytes);
  }
  Chunk& chunk = it->second;
  char* piece =
      reinterpret_cast<char*>(it->first) + chunk.carved * piece_bytes_;
  ++chunk.carved;
  ++chunk.live;
  ++live_;
  // A piece of a chunk that was not populated as a whole (a recording
  // thread carved it first) is populated on its own.
  if (populated) Populate(piece, piece_bytes_);
  return piece;
}

void BlockArena::Free(void* piece) {
  if (piece == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const uintptr_t base = ChunkOf(piece);
  auto it = chunks_.find(base);
  if (it == chunks_.end()) return;
  Chunk& chunk = it->second;
  --live_;
  if (--chunk.live == 0) {
    chunks_.erase(it);
    if (carving_ == base) carving_ = 0;
    if (retained_.size() < max_retained_ &&
        madvise(reinterpret_cast<void*>(base), kChunkBytes, MADV_FREE) == 0) {
      retained_.push_back(reinterpret_cast<char*>(base));
    } else {
      munmap(reinterpret_cast<void*>(base), kChunkBytes);
    }
    return;
  }
  if (chunk.freed.empty()) with_freed_.push_back(base);
  chunk.freed.push_back(static_cast<uint32_t>(
      (reinterpret_cast<uintptr_t>(piece) - base) / piece_bytes_));
}

void BlockArena::ReleaseFreePieces() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [base, chunk] : chunks_) {
    for (uint32_t& entry : chunk.freed) {
      if ((entry & kReleased) != 0) continue;
      // The whole pages inside the piece; the next write to them maps
      // zeroed ones.
      const uintptr_t begin = base + entry * piece_bytes_;
      const uintptr_t first = (begin + kPage - 1) & ~(kPage - 1);
      const uintptr_t last = (begin + piece_bytes_) & ~(kPage - 1);
      if (last > first) {
        madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
      }
      entry |= kReleased;
    }
  }
}

size_t BlockArena::live_pieces() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

size_t BlockArena::mapped_chunks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return chunks_.size() + retained_.size();
}

size_t BlockArena::retained_chunks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return retained_.size();
}

}  // namespace podscope::profiler::internal
