#include "podscope/trace_format/record_io.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/trace_format/format.h"

namespace podscope::trace_format {
namespace {

void PutU16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v);
  p[1] = static_cast<char>(v >> 8);
}
void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint16_t GetU16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) |
                               (static_cast<uint8_t>(p[1]) << 8));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint32_t RecordCrc(const char* length_bytes, uint8_t type, uint8_t encoding,
                   std::string_view payload) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(length_bytes), 4);
  const Bytef te[2] = {type, encoding};
  crc = crc32(crc, te, 2);
  // crc32() takes a uInt length; payloads are bounded by kMaxRecordPayload.
  crc = crc32(crc, reinterpret_cast<const Bytef*>(payload.data()),
              static_cast<uInt>(payload.size()));
  return static_cast<uint32_t>(crc);
}

class FileSink : public RecordSink {
 public:
  FileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileSink() override { (void)Close(); }

  absl::Status Append(std::string_view bytes) override {
    buffer_.append(bytes);
    if (buffer_.size() >= (1u << 20)) return WriteBuffer();
    return absl::OkStatus();
  }
  absl::Status Flush(bool sync) override {
    if (auto s = WriteBuffer(); !s.ok()) return s;
    if (sync && fd_ >= 0 && fdatasync(fd_) != 0) {
      return absl::InternalError(
          absl::StrCat("fdatasync ", path_, ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    absl::Status s = WriteBuffer();
    if (::close(fd_) != 0 && s.ok()) {
      s = absl::InternalError(
          absl::StrCat("close ", path_, ": ", std::strerror(errno)));
    }
    fd_ = -1;
    return s;
  }

 private:
  absl::Status WriteBuffer() {
    if (fd_ < 0) {
      if (buffer_.empty()) return absl::OkStatus();
      return absl::FailedPreconditionError(
          absl::StrCat(path_, " is already closed"));
    }
    size_t done = 0;
    while (done < buffer_.size()) {
      ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return absl::InternalError(
            absl::StrCat("write ", path_, ": ", std::strerror(errno)));
      }
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
    return absl::OkStatus();
  }

  int fd_;
  std::string path_;
  std::string buffer_;
};

class StringSink : public RecordSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  absl::Status Append(std::string_view bytes) override {
    out_->append(bytes);
    return absl::OkStatus();
  }
  absl::Status Flush(bool) override { return absl::OkStatus(); }
  absl::Status Close() override { return absl::OkStatus(); }

 private:
  std::string* out_;
};

}  // namespace

std::string_view RecordTypeName(RecordType type) {
  switch (type) {
    case RecordType::kMetadata: return "metadata";
    case RecordType::kStrings: return "strings";
    case RecordType::kTracks: return "tracks";
    case RecordType::kStacks: return "stacks";
    case RecordType::kClock: return "clock";
    case RecordType::kChunk: return "chunk";
    case RecordType::kDropCounts: return "drop-counts";
    case RecordType::kIndex: return "index";
    case RecordType::kTrailer: return "trailer";
  }
  return "unknown";
}

std::string EncodeFileHeader() {
  std::string header(kFileHeaderSize, '\0');
  std::memcpy(header.data(), kMagic, sizeof(kMagic));
  PutU16(header.data() + 8, kMajorVersion);
  PutU16(header.data() + 10, kMinorVersion);
  PutU32(header.data() + 12, 0);  // flags: none defined
  return header;
}

absl::Status CheckFileHeader(std::string_view data, std::string_view what) {
  if (data.size() < kFileHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "%s: too short for a Podscope trace (%d bytes, the header alone is "
        "%d)",
        what, data.size(), kFileHeaderSize));
  }
  if (std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what), ": not a Podscope trace file (bad magic bytes at offset 0)"));
  }
  const uint16_t major = GetU16(data.data() + 8);
  const uint16_t minor = GetU16(data.data() + 10);
  if (major > kMajorVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: written in trace format version %d.%d, newer than this reader "
        "(which reads major version %d); upgrade Podscope to read it",
        what, major, minor, kMajorVersion));
  }
  if (major == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": invalid trace format version 0.", minor));
  }
  return absl::OkStatus();
}

std::string EncodeRecord(RecordType type, RecordEncoding encoding,
                         std::string_view payload) {
  std::string out(kRecordHeaderSize + payload.size(), '\0');
  PutU32(out.data(), static_cast<uint32_t>(payload.size()));
  out[8] = static_cast<char>(type);
  out[9] = static_cast<char>(encoding);
  PutU32(out.data() + 4,
         RecordCrc(out.data(), static_cast<uint8_t>(type),
                   static_cast<uint8_t>(encoding), payload));
  std::memcpy(out.data() + kRecordHeaderSize, payload.data(), payload.size());
  return out;
}

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
void FinishCompressedRecord(RecordType type, size_t raw_size,
                            size_t deflated, std::string* out) {
  const size_t length = 4 + deflated;
  out->resize(kRecordHeaderSize + length);
  PutU32(out->data() + kRecordHeaderSize, static_cast<uint32_t>(raw_size));
  PutU32(out->data(), static_cast<uint32_t>(length));
  (*out)[8] = static_cast<char>(type);
  (*out)[9] = static_cast<char>(RecordEncoding::kZlib);
  PutU32(out->data() + 4,
         RecordCrc(out->data(), static_cast<uint8_t>(type),
                   static_cast<uint8_t>(RecordEncoding::kZlib),
                   std::string_view(out->data() + kRecordHeaderSize, length)));
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
  // Packed sections are already transformed for an entropy coder: at
  // level 1 Huffman coding alone compresses them nearly as well as LZ77
  // matching, at several times the speed.
  const int strategy = level == 1 ? Z_HUFFMAN_ONLY : Z_DEFAULT_STRATEGY;
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
  if (rc != Z_STREAM_END) return raw();
  FinishCompressedRecord(type, total, deflated, &out);
  return out;
}

absl::StatusOr<std::unique_ptr<RecordSink>> OpenFileSink(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  return std::make_unique<FileSink>(fd, path);
}

std::unique_ptr<RecordSink> MakeStringSink(std::string* out) {
  return std::make_unique<StringSink>(out);
}

absl::StatusOr<Payload> OpenPayload(const RecordView& record) {
  if (record.encoding == RecordEncoding::kRaw) return Payload(record.payload);
  auto damaged = [&](std::string_view why) {
    return absl::DataLossError(absl::StrFormat(
        "%s record at offset %d: compressed payload is damaged (%s)",
        RecordTypeName(record.type), record.offset, why));
  };
  if (record.payload.size() < 4) return damaged("no size prefix");
  const uint32_t size = GetU32(record.payload.data());
  // Deflate expands at most 1032:1 (two bits per 258-byte match), so a
  // larger claim is damage; it must not make the reader allocate it.
  const uint64_t most = (record.payload.size() - 4) * uint64_t{1032} + 1024;
  if (size > kMaxRecordPayload * size_t{4} || size > most) {
    return damaged(absl::StrFormat("claims %d bytes inflated", size));
  }
  auto out = std::make_unique_for_overwrite<char[]>(size + 1);
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, -15) != Z_OK) {
    return absl::InternalError("zlib inflateInit failed");
  }
  zs.next_in =
      reinterpret_cast<Bytef*>(const_cast<char*>(record.payload.data() + 4));
  zs.avail_in = static_cast<uInt>(record.payload.size() - 4);
  // One spare byte: a stream that inflates to more than it claims shows up
  // as output past `size`.
  zs.next_out = reinterpret_cast<Bytef*>(out.get());
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
  return Payload(std::move(out), size);
}

absl::StatusOr<std::string> DecodePayload(const RecordView& record) {
  auto payload = OpenPayload(record);
  if (!payload.ok()) return payload.status();
  return std::string(payload->view());
}

std::string ValidateRecord(std::string_view file, uint64_t offset,
                           RecordView* record) {
  const uint64_t remaining = file.size() - offset;
  if (remaining < kRecordHeaderSize) {
    return absl::StrFormat("torn record header (%d of %d bytes present)",
                           remaining, kRecordHeaderSize);
  }
  const char* p = file.data() + offset;
  const uint32_t length = GetU32(p);
  const uint8_t type = static_cast<uint8_t>(p[8]);
  const uint8_t encoding = static_cast<uint8_t>(p[9]);
  if (type == 0 || type > kMaxRecordType) {
    return absl::StrFormat("unknown record type %d", type);
  }
  if (encoding > static_cast<uint8_t>(RecordEncoding::kZlib)) {
    return absl::StrFormat("unknown record encoding %d", encoding);
  }
  if (length > kMaxRecordPayload) {
    return absl::StrFormat("record length %d exceeds the %d-byte limit",
                           length, kMaxRecordPayload);
  }
  if (length > remaining - kRecordHeaderSize) {
    return absl::StrFormat(
        "torn record: header says %d payload bytes, only %d remain", length,
        remaining - kRecordHeaderSize);
  }
  std::string_view payload(p + kRecordHeaderSize, length);
  if (RecordCrc(p, type, encoding, payload) != GetU32(p + 4)) {
    return "CRC mismatch";
  }
  record->offset = offset;
  record->type = static_cast<RecordType>(type);
  record->encoding = static_cast<RecordEncoding>(encoding);
  record->payload = payload;
  return {};
}

RecordScanner::RecordScanner(std::string_view file)
    : file_(file), pos_(kFileHeaderSize) {}

bool RecordScanner::Next(RecordView* record) {
  if (pos_ >= file_.size()) return false;
  std::string reason = ValidateRecord(file_, pos_, record);
  if (reason.empty()) {
    pos_ += record->size();
    return true;
  }
  // Damage: find the next offset that holds an intact record.
  const uint64_t damage = pos_;
  clean_end_ = false;
  for (uint64_t candidate = damage + 1; candidate < file_.size();
       ++candidate) {
    if (ValidateRecord(file_, candidate, record).empty()) {
      skipped_.push_back({damage, candidate - damage, std::move(reason)});
      pos_ = candidate + record->size();
      return true;
    }
  }
  skipped_.push_back({damage, file_.size() - damage, std::move(reason)});
  pos_ = file_.size();
  return false;
}

absl::StatusOr<RecordView> ReadRecordAt(std::string_view file,
                                        uint64_t offset) {
  if (offset < kFileHeaderSize || offset >= file.size()) {
    return absl::DataLossError(absl::StrFormat(
        "record offset %d is outside the file (%d bytes)", offset,
        file.size()));
  }
  RecordView record;
  std::string reason = ValidateRecord(file, offset, &record);
  if (!reason.empty()) {
    return absl::DataLossError(
        absl::StrFormat("record at offset %d: %s", offset, reason));
  }
  return record;
}

}  // namespace podscope::trace_format
