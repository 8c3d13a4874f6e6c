// Record framing: encoding records, appending them to a sink, and scanning
// a possibly damaged file for every intact record.
#ifndef PODSCOPE_TRACE_FORMAT_RECORD_IO_H_
#define PODSCOPE_TRACE_FORMAT_RECORD_IO_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/trace_format/format.h"

namespace podscope::trace_format {

// The 16-byte file header for this library's version.
std::string EncodeFileHeader();

// Checks a file header: magic and major version. `what` names the file in
// error messages.
absl::Status CheckFileHeader(std::string_view data, std::string_view what);

// One whole framed record: header and (possibly compressed) payload.
std::string EncodeRecord(RecordType type, RecordEncoding encoding,
                         std::string_view payload);
// Compresses `payload` with zlib at `level` and frames it.
std::string EncodeCompressedRecord(RecordType type, std::string_view payload,
                                   int level);
// Frames the concatenation of `parts` and `stored` as one compressed
// record (one standard raw deflate stream). `parts` are compressed with a
// strategy suited to packed chunk sections (Huffman coding only at level
// 1, zlib's default strategy above); `stored` (incompressible bits) goes
// into stored blocks. Level 0 frames the bytes raw.
std::string EncodeCompressedRecordParts(RecordType type,
                                        std::span<const std::string_view> parts,
                                        std::string_view stored, int level);

// The framing of the record that starts `header` (at least
// kRecordHeaderSize bytes): its payload length and type as written; neither
// the CRC nor the payload is checked. For assembling whole records from a
// byte stream.
struct RecordFrame {
  uint32_t payload_length = 0;
  RecordType type = RecordType::kMetadata;
  uint64_t size() const { return kRecordHeaderSize + payload_length; }
};
RecordFrame PeekRecordFrame(std::string_view header);

// Where records go: a file, a network stream, memory.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual absl::Status Append(std::string_view bytes) = 0;
  // Makes appended bytes visible to other processes (and durable with
  // `sync`).
  virtual absl::Status Flush(bool sync) = 0;
  virtual absl::Status Close() = 0;
};

// Creates (truncating) a file. Writes go straight to the kernel on Flush,
// so a process killed after a Flush leaves every flushed record on disk.
absl::StatusOr<std::unique_ptr<RecordSink>> OpenFileSink(
    const std::string& path);
// The same over a file the caller created (with O_EXCL, say); takes `fd`.
// `path` names it in errors.
std::unique_ptr<RecordSink> AdoptFileSink(int fd, std::string path);

// Appends to a string owned by the caller (tests, network streaming).
std::unique_ptr<RecordSink> MakeStringSink(std::string* out);

// A record as found in a file. `payload` points into the scanned buffer.
struct RecordView {
  uint64_t offset = 0;
  RecordType type = RecordType::kMetadata;
  RecordEncoding encoding = RecordEncoding::kRaw;
  std::string_view payload;
  uint64_t size() const { return kRecordHeaderSize + payload.size(); }
};

// A record's payload ready to parse: a view of the record itself when it is
// raw, inflated bytes owned by this object when it is compressed.
class Payload {
 public:
  Payload() = default;
  explicit Payload(std::string_view view) : view_(view) {}
  Payload(std::unique_ptr<char[]> owned, size_t size)
      : owned_(std::move(owned)), capacity_(size), view_(owned_.get(), size) {}
  std::string_view view() const { return view_; }

 private:
  friend absl::Status OpenPayloadInto(const RecordView& record,
                                      Payload* payload);
  std::unique_ptr<char[]> owned_;
  size_t capacity_ = 0;
  std::string_view view_;
};

// Inflates a record's payload if it is compressed.
absl::StatusOr<Payload> OpenPayload(const RecordView& record);
// The same into `payload`, whose buffer is used again when it is large
// enough (a reader opening chunk after chunk allocates once). On error the
// view is empty.
absl::Status OpenPayloadInto(const RecordView& record, Payload* payload);
// The same, as a copy.
absl::StatusOr<std::string> DecodePayload(const RecordView& record);

// Reads and verifies the record at `offset` of `file` (which starts with
// the file header).
absl::StatusOr<RecordView> ReadRecordAt(std::string_view file, uint64_t offset);

// Why the record at `offset` of `file` is not intact, or an empty string
// (and `record` filled in) if it is.
std::string ValidateRecord(std::string_view file, uint64_t offset,
                           RecordView* record);

// A range of the file that did not hold an intact record. Adjacent damage
// is one range: `reason` says what was wrong at its start (and, in a
// reader's report, how many more damaged stretches or unusable records
// follow in the range), `count` how many it covers in all.
struct SkippedRange {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  std::string reason;
  uint64_t count = 1;
};

// Walks the records of a file in order. When a record is damaged (torn,
// bad CRC, impossible header), the damage is reported as a SkippedRange and
// the scan resynchronises at the next intact record.
//
// Resynchronising costs work linear in the file's size, however hostile the
// file (docs/trace-format.md "Recovery"): an offset is CRC-checked only
// when its header is plausible, and the CRC work spent on records that turn
// out damaged is bounded by twice the file's size plus 1 MiB. Past that
// budget a candidate too long for what is left of it is not checked, and
// the skipped range says so.
class RecordScanner {
 public:
  // `file` is the whole file, header included; the header must have been
  // checked already.
  explicit RecordScanner(std::string_view file);

  // The next intact record, or false at the end.
  bool Next(RecordView* record);

  const std::vector<SkippedRange>& skipped() const { return skipped_; }
  // True when the file ended exactly after an intact record.
  bool clean_end() const { return clean_end_; }
  // Bytes run through the CRC so far: the work the scan did. At most the
  // file's size on intact records plus the budget on damaged ones.
  uint64_t crc_bytes() const { return crc_bytes_; }

 private:
  enum class Crc { kIntact, kDamaged, kUnchecked };
  // True (and the candidate counted as unchecked) when the budget left
  // cannot pay for the CRC of a record of `length` bytes. Checked before
  // anything that reads elsewhere in the file.
  bool Unaffordable(uint32_t length);
  // Checks the CRC of the record at `offset` if the budget allows.
  Crc Verify(uint64_t offset, uint32_t length, RecordView* record);
  // Whether `offset` holds a plausible record header (known type and
  // encoding, a length within the limit and the bytes left).
  bool Plausible(uint64_t offset, uint32_t* length) const;
  // Whether a record at `offset` of `length` bytes ends where a file or a
  // record can: at the end, in a torn header, or at a header with a known
  // type and encoding.
  bool Anchored(uint64_t offset, uint32_t length) const;
  // Finds the next intact record after damage at pos_.
  bool Resync(std::string reason, RecordView* record);

  std::string_view file_;
  uint64_t pos_;
  std::vector<SkippedRange> skipped_;
  bool clean_end_ = true;
  uint64_t crc_bytes_ = 0;
  // CRC bytes still allowed on records that turn out damaged.
  uint64_t budget_;
  // Candidates left unchecked for want of budget.
  uint64_t unchecked_ = 0;
  // The last search for an anchored intact record covered the offsets
  // before searched_to_; when one was found it is anchor_, at searched_to_.
  uint64_t searched_to_ = 0;
  bool have_anchor_ = false;
  RecordView anchor_;
};

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_RECORD_IO_H_
