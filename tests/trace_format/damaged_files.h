// Hostile trace files of any size (1-64 MiB in the tests, the large-input
// fuzz check and the reader's benchmark): each starts like a real trace (a
// valid file header and metadata record) and then holds what a damaged or
// crafted file can hold to make a reader work or allocate far more than its
// size. Header-only so that the benchmark and the fuzz check can use it
// without the GoogleTest helpers.
#ifndef PODSCOPE_TESTS_TRACE_FORMAT_DAMAGED_FILES_H_
#define PODSCOPE_TESTS_TRACE_FORMAT_DAMAGED_FILES_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format::testing {

enum class DamageKind {
  // 0x01 bytes to the end: every offset reads as a header of a 16 MiB
  // metadata record.
  kRepeatedByte,
  // A record header every 10 bytes, each claiming a payload that ends
  // exactly at the end of the file, none with a matching CRC.
  kHeadersToTheEnd,
  // A record header every 10 bytes, each claiming a payload that ends
  // where another of them starts.
  kChainedHeaders,
  // Intact strings records whose first ids are near the largest the
  // reader accepts, or anywhere in the 32-bit range.
  kHugeStringIds,
  // Intact chunk and compressed records that claim counts and sizes far
  // beyond their bytes.
  kHugeCounts,
  // Random bytes.
  kRandomTail,
};
inline constexpr DamageKind kAllDamageKinds[] = {
    DamageKind::kRepeatedByte,   DamageKind::kHeadersToTheEnd,
    DamageKind::kChainedHeaders, DamageKind::kHugeStringIds,
    DamageKind::kHugeCounts,     DamageKind::kRandomTail,
};

inline const char* DamageKindName(DamageKind kind) {
  switch (kind) {
    case DamageKind::kRepeatedByte:
      return "repeated_byte";
    case DamageKind::kHeadersToTheEnd:
      return "headers_to_the_end";
    case DamageKind::kChainedHeaders:
      return "chained_headers";
    case DamageKind::kHugeStringIds:
      return "huge_string_ids";
    case DamageKind::kHugeCounts:
      return "huge_counts";
    case DamageKind::kRandomTail:
      return "random_tail";
  }
  return "unknown";
}

namespace damaged_internal {

inline void PutU32(std::string* out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*out)[at + i] = static_cast<char>(v >> (8 * i));
}

inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A header whose type, encoding and length are plausible and whose CRC is
// not the payload's.
inline void PutPlausibleHeader(std::string* out, size_t at, uint32_t length) {
  PutU32(out, at, length);
  PutU32(out, at + 4, 0xDEADBEEF);
  (*out)[at + 8] = static_cast<char>(RecordType::kChunk);
  (*out)[at + 9] = static_cast<char>(RecordEncoding::kRaw);
}

inline std::string Start() {
  proto::Metadata m;
  m.set_host("damaged");
  m.set_pid(1);
  return EncodeFileHeader() + EncodeRecord(RecordType::kMetadata,
                                           RecordEncoding::kRaw,
                                           m.SerializeAsString());
}

// Intact strings records up to `size` bytes; the first starts just below
// the largest id a reader used to accept for a file of `size` bytes.
inline void AppendHugeStringIds(std::string* out, size_t size,
                                std::mt19937_64& rng) {
  bool first = true;
  while (out->size() + 200 < size) {
    proto::StringTable table;
    const uint64_t id = first ? 8 * uint64_t{size} : rng() % 0xFFFF0000u + 1;
    table.set_first_id(static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(id, 1), 0xFFFF0000u)));
    first = false;
    for (int i = 0; i < 4; ++i) {
      table.add_strings("s" + std::to_string(rng() % 1000000));
    }
    out->append(EncodeRecord(RecordType::kStrings, RecordEncoding::kRaw,
                             table.SerializeAsString()));
  }
}

// A packed chunk whose track claims 2^40 events of every kind, with a few
// bytes per section.
inline std::string HugeCountChunk() {
  std::string tracks;
  PutVarint(&tracks, 1);  // track id
  PutVarint(&tracks, 0);  // flags
  for (int i = 0; i < 6; ++i) PutVarint(&tracks, uint64_t{1} << 40);
  std::string p;
  p.push_back(0);  // packed chunk marker
  p.push_back(2);  // layout 1.2
  const int sections = 8;
  PutVarint(&p, sections);
  PutVarint(&p, tracks.size());
  for (int s = 1; s < sections; ++s) PutVarint(&p, 16);
  p += tracks;
  p.append(16 * (sections - 1), '\0');
  return p;
}

inline void AppendHugeCounts(std::string* out, size_t size) {
  const std::string chunk =
      EncodeRecord(RecordType::kChunk, RecordEncoding::kRaw, HugeCountChunk());
  // A compressed record that claims to inflate to 1 GiB from 16 bytes.
  std::string bomb(4, '\0');
  PutU32(&bomb, 0, 1u << 30);
  bomb.append(16, '\x03');
  const std::string inflating =
      EncodeRecord(RecordType::kChunk, RecordEncoding::kZlib, bomb);
  while (out->size() + chunk.size() + inflating.size() <= size) {
    out->append(chunk);
    out->append(inflating);
  }
}

}  // namespace damaged_internal

// A file of exactly `size` bytes (at least 4 KiB) of the given kind.
inline std::string MakeDamagedFile(DamageKind kind, size_t size,
                                   uint64_t seed = 1) {
  using namespace damaged_internal;
  size = std::max<size_t>(size, 4096);
  std::mt19937_64 rng(seed);
  std::string out = Start();
  const size_t start = out.size();
  switch (kind) {
    case DamageKind::kRepeatedByte:
      out.resize(size, '\x01');
      break;
    case DamageKind::kHeadersToTheEnd:
      out.resize(size, '\0');
      for (size_t at = start; at + kRecordHeaderSize <= size;
           at += kRecordHeaderSize) {
        PutPlausibleHeader(
            &out, at, static_cast<uint32_t>(size - at - kRecordHeaderSize));
      }
      break;
    case DamageKind::kChainedHeaders: {
      out.resize(size, '\0');
      const size_t slots = (size - start) / kRecordHeaderSize;
      for (size_t i = 0; i < slots; ++i) {
        // Ends where a later header starts, up to the end of the file.
        const size_t later = i + 1 + rng() % (slots - i);
        const size_t at = start + i * kRecordHeaderSize;
        const size_t end = std::min(start + later * kRecordHeaderSize, size);
        PutPlausibleHeader(&out, at,
                           static_cast<uint32_t>(end - at - kRecordHeaderSize));
      }
      break;
    }
    case DamageKind::kHugeStringIds:
      AppendHugeStringIds(&out, size, rng);
      break;
    case DamageKind::kHugeCounts:
      AppendHugeCounts(&out, size);
      break;
    case DamageKind::kRandomTail:
      break;
  }
  // Whatever is left is random bytes.
  while (out.size() < size) out.push_back(static_cast<char>(rng()));
  out.resize(size);
  return out;
}

}  // namespace podscope::trace_format::testing

#endif  // PODSCOPE_TESTS_TRACE_FORMAT_DAMAGED_FILES_H_
