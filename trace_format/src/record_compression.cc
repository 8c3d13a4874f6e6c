// Compressed records: deflating payloads into records (zlib, or the
// Huffman-only encoder for packed chunk sections) and inflating them.
#include <zlib.h>

#include <cstring>
#include <memory>

#include "absl/strings/str_format.h"
#include "huffman_deflate.h"
#include "huffman_inflate.h"
#include "podscope/base/coding.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"
#include "record_framing.h"

namespace podscope::trace_format {

// A compressed payload is the uncompressed size (u32) followed by a raw
// deflate stream (RFC 1951): the record's CRC already guards the bytes, so
// zlib's own header and Adler-32 would only cost time, and the size lets a
// reader inflate into an exact buffer in one call.
namespace {

// One deflater per thread and settings, reset between records:
// initialising one allocates and clears its window each time.
z_stream* ThreadDeflater(int level, int strategy) {
  struct Deflater {
    z_stream zs;
    int level = -1;
    int strategy = -1;
    Deflater() { std::memset(&zs, 0, sizeof(zs)); }
    ~Deflater() {
      if (level >= 0) deflateEnd(&zs);
    }
  };
  thread_local Deflater d;
  if (d.level != level || d.strategy != strategy) {
    if (d.level >= 0) deflateEnd(&d.zs);
    std::memset(&d.zs, 0, sizeof(d.zs));
    d.level = -1;
    if (deflateInit2(&d.zs, level, Z_DEFLATED, -15, 7, strategy) != Z_OK) {
      return nullptr;
    }
    d.level = level;
    d.strategy = strategy;
  } else {
    deflateReset(&d.zs);
  }
  return &d.zs;
}

// Frames the deflated bytes that follow the header and size in `out`.
void FinishCompressedRecord(RecordType type, size_t raw_size, size_t deflated,
                            std::string* out) {
  out->resize(kRecordHeaderSize + 4 + deflated);
  base::EncodeFixed32(out->data() + kRecordHeaderSize,
                      static_cast<uint32_t>(raw_size));
  WriteRecordHeader(type, RecordEncoding::kZlib, out);
}

}  // namespace

std::string EncodeCompressedRecord(RecordType type, std::string_view payload,
                                   int level) {
  z_stream* zs = ThreadDeflater(level, Z_DEFAULT_STRATEGY);
  if (zs == nullptr) return EncodeRecord(type, RecordEncoding::kRaw, payload);
  const uLong bound = deflateBound(zs, static_cast<uLong>(payload.size()));
  std::string out(kRecordHeaderSize + 4 + bound, '\0');
  zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(payload.data()));
  zs->avail_in = static_cast<uInt>(payload.size());
  zs->next_out = reinterpret_cast<Bytef*>(out.data() + kRecordHeaderSize + 4);
  zs->avail_out = static_cast<uInt>(bound);
  if (deflate(zs, Z_FINISH) != Z_STREAM_END) {
    return EncodeRecord(type, RecordEncoding::kRaw, payload);
  }
  FinishCompressedRecord(type, payload.size(), zs->total_out, &out);
  return out;
}

std::string EncodeCompressedRecordParts(RecordType type,
                                        std::span<const std::string_view> parts,
                                        std::string_view stored, int level) {
  size_t total = stored.size();
  for (std::string_view p : parts) total += p.size();
  auto raw = [&] {
    std::string payload;
    payload.reserve(total);
    for (std::string_view p : parts) payload.append(p);
    payload.append(stored);
    return EncodeRecord(type, RecordEncoding::kRaw, payload);
  };
  if (level <= 0 || total > kMaxRecordPayload) return raw();
  if (level == 1) {
    // Packed sections are already transformed for an entropy coder: at
    // level 1 Huffman coding alone, one table per section, compresses
    // them nearly as well as LZ77 matching, at several times the speed.
    std::string out(
        kRecordHeaderSize + 4 + DeflatedBound(total, parts.size() + 1), '\0');
    const size_t deflated =
        DeflateHuffmanParts(parts, stored, out.data() + kRecordHeaderSize + 4);
    FinishCompressedRecord(type, total, deflated, &out);
    return out;
  }
  const int strategy = Z_DEFAULT_STRATEGY;
  z_stream* zs = ThreadDeflater(level, strategy);
  if (zs == nullptr) return raw();
  // Stored blocks cost 5 bytes per 64 KiB at most.
  const uLong bound = deflateBound(zs, static_cast<uLong>(total)) +
                      5 * (stored.size() / 16384 + 2) + 64;
  std::string out(kRecordHeaderSize + 4 + bound, '\0');
  zs->next_out = reinterpret_cast<Bytef*>(out.data() + kRecordHeaderSize + 4);
  zs->avail_out = static_cast<uInt>(bound);
  for (std::string_view p : parts) {
    zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p.data()));
    zs->avail_in = static_cast<uInt>(p.size());
    if (deflate(zs, Z_NO_FLUSH) != Z_OK || zs->avail_in != 0) return raw();
  }
  if (!stored.empty()) {
    // Stored blocks for the bits: copying them costs less than coding
    // bytes that do not compress. On failure they are coded as the rest.
    (void)deflateParams(zs, 0, Z_DEFAULT_STRATEGY);
    zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stored.data()));
    zs->avail_in = static_cast<uInt>(stored.size());
  }
  const int rc = deflate(zs, Z_FINISH);
  const size_t deflated = zs->total_out;
  // The next record starts from the settings ThreadDeflater expects.
  (void)deflateReset(zs);
  (void)deflateParams(zs, level, strategy);
  (void)strategy;
  if (rc != Z_STREAM_END) return raw();
  FinishCompressedRecord(type, total, deflated, &out);
  return out;
}

absl::Status OpenPayloadInto(const RecordView& record, Payload* payload) {
  payload->view_ = {};
  if (record.encoding == RecordEncoding::kRaw) {
    payload->view_ = record.payload;
    return absl::OkStatus();
  }
  auto damaged = [&](std::string_view why) {
    return absl::DataLossError(absl::StrFormat(
        "%s record at offset %d: compressed payload is damaged (%s)",
        RecordTypeName(record.type), record.offset, why));
  };
  if (record.payload.size() < 4) return damaged("no size prefix");
  const uint32_t size = base::DecodeFixed32(record.payload.data());
  // Deflate expands at most 1032:1 (two bits per 258-byte match), so a
  // larger claim is damage; it must not make the reader allocate it.
  const uint64_t most = (record.payload.size() - 4) * uint64_t{1032} + 1024;
  if (size > kMaxRecordPayload * size_t{4} || size > most) {
    return damaged(absl::StrFormat("claims %d bytes inflated", size));
  }
  // One spare byte: a stream that inflates to more than it claims shows up
  // as output past `size`.
  if (payload->owned_ == nullptr || payload->capacity_ < size + size_t{1}) {
    payload->owned_ = std::make_unique_for_overwrite<char[]>(size + 1);
    payload->capacity_ = size + size_t{1};
  }
  char* const out = payload->owned_.get();
  // What the writer's level 1 writes is read without zlib; zlib takes the
  // rest, and names the damage when there is any.
  if (InflateHuffmanLiterals(
          reinterpret_cast<const uint8_t*>(record.payload.data() + 4),
          record.payload.size() - 4, reinterpret_cast<uint8_t*>(out), size)) {
    payload->view_ = std::string_view(out, size);
    return absl::OkStatus();
  }
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, -15) != Z_OK) {
    return absl::InternalError("zlib inflateInit failed");
  }
  zs.next_in =
      reinterpret_cast<Bytef*>(const_cast<char*>(record.payload.data() + 4));
  zs.avail_in = static_cast<uInt>(record.payload.size() - 4);
  zs.next_out = reinterpret_cast<Bytef*>(out);
  zs.avail_out = size + 1;
  const int rc = inflate(&zs, Z_FINISH);
  const size_t produced = zs.total_out;
  const std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return damaged(msg.empty() ? absl::StrFormat("zlib error %d", rc)
                               : "zlib: " + msg);
  }
  if (produced != size) {
    return damaged(absl::StrFormat("inflates to %d bytes, not the %d it claims",
                                   produced, size));
  }
  payload->view_ = std::string_view(out, size);
  return absl::OkStatus();
}

absl::StatusOr<Payload> OpenPayload(const RecordView& record) {
  Payload payload;
  PODSCOPE_RETURN_IF_ERROR(OpenPayloadInto(record, &payload));
  return payload;
}

absl::StatusOr<std::string> DecodePayload(const RecordView& record) {
  PODSCOPE_ASSIGN_OR_RETURN(auto payload, OpenPayload(record));
  return std::string(payload.view());
}

}  // namespace podscope::trace_format
