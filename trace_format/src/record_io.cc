#include "podscope/trace_format/record_io.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <vector>
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

// ------------------------------------------------ Huffman-only deflate

// zlib 1.2's Z_HUFFMAN_ONLY codes about 80-120 MB/s; packed chunk sections
// need nothing more than one Huffman table per section, which this writes
// as standard deflate blocks (RFC 1951) several times faster. Readers
// inflate them with zlib as any other stream.
class DeflateBits {
 public:
  explicit DeflateBits(char* out) : p_(reinterpret_cast<uint8_t*>(out)),
                                    start_(p_) {}
  void Put(uint32_t bits, uint32_t n) {  // n <= 32
    acc_ |= uint64_t{bits} << n_;
    n_ += n;
    if (n_ >= 32) {
      const auto w = static_cast<uint32_t>(acc_);
      std::memcpy(p_, &w, 4);
      p_ += 4;
      acc_ >>= 32;
      n_ -= 32;
    }
  }
  void AlignToByte() {
    while (n_ > 0) {
      *p_++ = static_cast<uint8_t>(acc_);
      acc_ >>= 8;
      n_ = n_ >= 8 ? n_ - 8 : 0;
    }
    acc_ = 0;
  }
  void Stored(const uint8_t* data, size_t n, bool final) {
    Put(final ? 1 : 0, 3);
    AlignToByte();
    const uint16_t len = static_cast<uint16_t>(n);
    const uint16_t nlen = static_cast<uint16_t>(~len);
    PutU16(reinterpret_cast<char*>(p_), len);
    PutU16(reinterpret_cast<char*>(p_) + 2, nlen);
    p_ += 4;
    if (n > 0) std::memcpy(p_, data, n);
    p_ += n;
  }
  size_t size() const { return static_cast<size_t>(p_ - start_); }

 private:
  uint8_t* p_;
  uint8_t* start_;
  uint64_t acc_ = 0;
  uint32_t n_ = 0;
};

// Code lengths of a Huffman code for freq[0..n), none over `limit` bits
// (frequencies are halved until the tree fits); 0 for unused symbols.
void HuffmanLengths(const uint32_t* freq, int n, uint32_t limit,
                    uint8_t* len) {
  std::vector<uint32_t> f(freq, freq + n);
  struct Leaf {
    uint32_t weight;
    int symbol;
  };
  std::vector<Leaf> leaves;
  std::vector<uint64_t> weight;
  std::vector<int> parent;
  while (true) {
    std::fill(len, len + n, 0);
    leaves.clear();
    for (int i = 0; i < n; ++i) {
      if (f[i] > 0) leaves.push_back({f[i], i});
    }
    if (leaves.empty()) return;
    if (leaves.size() == 1) {
      len[leaves[0].symbol] = 1;
      return;
    }
    std::sort(leaves.begin(), leaves.end(), [](const Leaf& a, const Leaf& b) {
      return a.weight != b.weight ? a.weight < b.weight : a.symbol < b.symbol;
    });
    // Nodes 0..m-1 are the leaves in order, m.. the merged ones, whose
    // weights come out in order: two queues build the tree in O(m).
    const size_t m = leaves.size();
    weight.assign(2 * m - 1, 0);
    parent.assign(2 * m - 1, -1);
    for (size_t i = 0; i < m; ++i) weight[i] = leaves[i].weight;
    size_t next_leaf = 0, next_node = m;
    auto take = [&](size_t made) {
      if (next_leaf < m &&
          (next_node >= made || weight[next_leaf] <= weight[next_node])) {
        return next_leaf++;
      }
      return next_node++;
    };
    for (size_t made = m; made < 2 * m - 1; ++made) {
      const size_t a = take(made);
      const size_t b = take(made);
      weight[made] = weight[a] + weight[b];
      parent[a] = static_cast<int>(made);
      parent[b] = static_cast<int>(made);
    }
    // Depths from the root (the last node) down.
    std::vector<uint32_t> depth(2 * m - 1, 0);
    uint32_t deepest = 0;
    for (size_t i = 2 * m - 1; i-- > 0;) {
      if (parent[i] >= 0) depth[i] = depth[static_cast<size_t>(parent[i])] + 1;
      if (i < m) deepest = std::max(deepest, depth[i]);
    }
    if (deepest <= limit) {
      for (size_t i = 0; i < m; ++i) {
        len[leaves[i].symbol] = static_cast<uint8_t>(depth[i]);
      }
      return;
    }
    for (uint32_t& x : f) {
      if (x > 0) x = (x + 1) / 2;
    }
  }
}

// Canonical codes (RFC 1951 3.2.2), bit-reversed for an LSB-first writer.
void CanonicalCodes(const uint8_t* len, int n, uint32_t* code) {
  uint32_t count[16] = {0}, next[16] = {0};
  for (int i = 0; i < n; ++i) ++count[len[i]];
  count[0] = 0;
  uint32_t c = 0;
  for (int bits = 1; bits < 16; ++bits) {
    c = (c + count[bits - 1]) << 1;
    next[bits] = c;
  }
  for (int i = 0; i < n; ++i) {
    if (len[i] == 0) continue;
    uint32_t v = next[len[i]]++, r = 0;
    for (int b = 0; b < len[i]; ++b) {
      r = (r << 1) | (v & 1);
      v >>= 1;
    }
    code[i] = r;
  }
}

// One block: dynamic Huffman codes for the bytes, or stored when that is
// smaller. Never final.
void HuffmanBlock(const uint8_t* data, size_t n, DeflateBits* out) {
  uint32_t freq[257] = {0};
  {
    // Four histograms: consecutive equal bytes do not wait on each other.
    uint32_t h[4][256] = {};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      ++h[0][data[i]];
      ++h[1][data[i + 1]];
      ++h[2][data[i + 2]];
      ++h[3][data[i + 3]];
    }
    for (; i < n; ++i) ++h[0][data[i]];
    for (int b = 0; b < 256; ++b) freq[b] = h[0][b] + h[1][b] + h[2][b] + h[3][b];
  }
  freq[256] = 1;  // end of block
  uint8_t len[258] = {0};  // 257 literal/length codes, then 1 distance code
  HuffmanLengths(freq, 257, 15, len);
  uint64_t data_bits = 0;
  for (int i = 0; i < 257; ++i) data_bits += uint64_t{freq[i]} * len[i];
  // The code lengths, zero runs shortened with codes 17 and 18.
  struct Cl {
    uint8_t symbol, extra_bits;
    uint8_t extra;
  };
  Cl cl[258];
  int cl_count = 0;
  uint32_t cl_freq[19] = {0};
  for (int i = 0; i < 258;) {
    if (len[i] == 0) {
      int run = 1;
      while (i + run < 258 && len[i + run] == 0 && run < 138) ++run;
      if (run >= 11) {
        cl[cl_count++] = {18, 7, static_cast<uint8_t>(run - 11)};
        i += run;
        ++cl_freq[18];
        continue;
      }
      if (run >= 3) {
        cl[cl_count++] = {17, 3, static_cast<uint8_t>(run - 3)};
        i += run;
        ++cl_freq[17];
        continue;
      }
    }
    cl[cl_count++] = {len[i], 0, 0};
    ++cl_freq[len[i]];
    ++i;
  }
  // zlib requires a complete code-length code: at least two symbols.
  int used = 0;
  for (uint32_t f : cl_freq) used += f > 0;
  if (used < 2) ++cl_freq[cl_freq[0] > 0 ? 1 : 0];
  uint8_t cl_len[19];
  HuffmanLengths(cl_freq, 19, 7, cl_len);
  static constexpr uint8_t kOrder[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                         11, 4,  12, 3, 13, 2, 14, 1, 15};
  int hclen = 19;
  while (hclen > 4 && cl_len[kOrder[hclen - 1]] == 0) --hclen;
  uint64_t header_bits = 3 + 5 + 5 + 4 + 3 * static_cast<uint64_t>(hclen);
  for (int i = 0; i < cl_count; ++i) {
    header_bits += cl_len[cl[i].symbol] + cl[i].extra_bits;
  }
  if (header_bits + data_bits >= (n + 5) * 8) {
    out->Stored(data, n, false);
    return;
  }
  uint32_t cl_code[19] = {0};
  CanonicalCodes(cl_len, 19, cl_code);
  uint32_t code[257] = {0};
  CanonicalCodes(len, 257, code);
  out->Put(2 << 1, 3);  // not final, dynamic Huffman
  out->Put(0, 5);       // 257 literal/length codes
  out->Put(0, 5);       // 1 distance code (unused)
  out->Put(static_cast<uint32_t>(hclen - 4), 4);
  for (int i = 0; i < hclen; ++i) out->Put(cl_len[kOrder[i]], 3);
  for (int i = 0; i < cl_count; ++i) {
    out->Put(cl_code[cl[i].symbol], cl_len[cl[i].symbol]);
    if (cl[i].extra_bits > 0) out->Put(cl[i].extra, cl[i].extra_bits);
  }
  // Pack each symbol's code and length in one word.
  uint32_t table[256];
  for (int b = 0; b < 256; ++b) table[b] = (code[b] << 5) | len[b];
  for (size_t i = 0; i < n; ++i) {
    const uint32_t t = table[data[i]];
    out->Put(t >> 5, t & 31);
  }
  out->Put(code[256], len[256]);
}

// A raw deflate stream of `parts` (Huffman-coded, one table per block of
// at most 64 KiB of a part) then `stored` (stored blocks). Returns its
// size; `out` has room for DeflatedBound.
size_t DeflateHuffmanParts(std::span<const std::string_view> parts,
                           std::string_view stored, char* out) {
  DeflateBits bits(out);
  constexpr size_t kBlock = 65535;
  for (std::string_view p : parts) {
    const auto* d = reinterpret_cast<const uint8_t*>(p.data());
    for (size_t off = 0; off < p.size(); off += kBlock) {
      HuffmanBlock(d + off, std::min(kBlock, p.size() - off), &bits);
    }
  }
  const auto* d = reinterpret_cast<const uint8_t*>(stored.data());
  for (size_t off = 0; off < stored.size(); off += kBlock) {
    bits.Stored(d + off, std::min(kBlock, stored.size() - off), false);
  }
  bits.Stored(nullptr, 0, /*final=*/true);
  return bits.size();
}

size_t DeflatedBound(size_t bytes, size_t pieces) {
  // Stored blocks: 5 bytes each (and up to 7 bits of padding); Huffman
  // blocks are only used when smaller. Plus 8 bytes of slack for the
  // 32-bit writes.
  return bytes + 6 * (bytes / 65535 + pieces + 2) + 16;
}

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
    std::string out(kRecordHeaderSize + 4 +
                        DeflatedBound(total, parts.size() + 1),
                    '\0');
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

RecordFrame PeekRecordFrame(std::string_view header) {
  RecordFrame frame;
  frame.payload_length = GetU32(header.data());
  frame.type = static_cast<RecordType>(static_cast<uint8_t>(header[8]));
  return frame;
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
