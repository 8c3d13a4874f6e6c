#include "podscope/trace_format/streamed_file.h"

#include "absl/strings/str_cat.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {
namespace {

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StreamedFile>> StreamedFile::Create(
    const std::string& path) {
  auto sink = OpenFileSink(path);
  if (!sink.ok()) return sink.status();
  return std::unique_ptr<StreamedFile>(new StreamedFile(*std::move(sink)));
}

absl::Status StreamedFile::Write(std::string_view bytes) {
  absl::Status s = sink_->Append(bytes);
  if (s.ok()) offset_ += bytes.size();
  return s;
}

absl::Status StreamedFile::Append(std::string_view bytes) {
  if (!error_.ok()) return error_;
  if (finished_) {
    return absl::FailedPreconditionError("the streamed file is finished");
  }
  received_ += bytes.size();
  pending_.append(bytes);
  size_t pos = 0;
  absl::Status s;
  if (!header_done_) {
    if (pending_.size() < kFileHeaderSize) return absl::OkStatus();
    s = CheckFileHeader(std::string_view(pending_).substr(0, kFileHeaderSize),
                        "the capture stream");
    if (s.ok()) s = Write(std::string_view(pending_).substr(0, kFileHeaderSize));
    if (!s.ok()) return error_ = s;
    header_done_ = true;
    pos = kFileHeaderSize;
  }
  size_t written_to = pos;  // records before this are on disk
  while (pending_.size() - pos >= kRecordHeaderSize) {
    const uint32_t length = GetU32(pending_.data() + pos);
    if (length > kMaxRecordPayload) {
      return error_ = absl::DataLossError(absl::StrCat(
                 "the capture stream holds an impossible record length ",
                 length, " at offset ", offset_ + (pos - written_to)));
    }
    const size_t size = kRecordHeaderSize + length;
    if (pending_.size() - pos < size) break;
    const auto type = static_cast<RecordType>(
        static_cast<uint8_t>(pending_[pos + 8]));
    if (type == RecordType::kIndex || type == RecordType::kTrailer) {
      // Flush what precedes, then hold the index (the trailer is rebuilt).
      s = Write(std::string_view(pending_).substr(written_to, pos - written_to));
      if (!s.ok()) return error_ = s;
      if (type == RecordType::kIndex) index_record_ = pending_.substr(pos, size);
      pos += size;
      written_to = pos;
      continue;
    }
    pos += size;
  }
  s = Write(std::string_view(pending_).substr(written_to, pos - written_to));
  if (s.ok()) s = sink_->Flush(false);
  if (!s.ok()) return error_ = s;
  pending_.erase(0, pos);
  return absl::OkStatus();
}

absl::Status StreamedFile::AddRecord(
    RecordType type, const google::protobuf::MessageLite& message) {
  if (!error_.ok()) return error_;
  if (!header_done_) {
    return absl::FailedPreconditionError(
        "no trace arrived: nothing to add records to");
  }
  const std::string framed =
      EncodeCompressedRecord(type, message.SerializeAsString(), 1);
  added_.push_back({type, offset_, framed.size()});
  absl::Status s = Write(framed);
  if (s.ok()) s = sink_->Flush(false);
  if (!s.ok()) error_ = s;
  return s;
}

absl::Status StreamedFile::Finish() {
  if (finished_) return error_;
  finished_ = true;
  absl::Status s = error_;
  if (s.ok() && !index_record_.empty()) {
    // Decode the held index through the reader's own validation.
    const std::string buf = EncodeFileHeader() + index_record_;
    auto view = ReadRecordAt(buf, kFileHeaderSize);
    absl::StatusOr<std::string> payload =
        view.ok() ? DecodePayload(*view) : absl::StatusOr<std::string>(view.status());
    proto::Index index;
    if (!payload.ok()) {
      s = payload.status();
    } else if (!index.ParseFromString(*payload)) {
      s = absl::DataLossError("the capture stream's index does not parse");
    } else {
      for (const Added& a : added_) {
        proto::RecordEntry* r = index.add_records();
        r->set_type(static_cast<uint32_t>(a.type));
        r->set_offset(a.offset);
        r->set_length(a.length);
      }
      const uint64_t index_offset = offset_;
      s = Write(EncodeCompressedRecord(RecordType::kIndex,
                                       index.SerializeAsString(), 1));
      if (s.ok()) {
        std::string trailer(kTrailerPayloadSize, '\0');
        for (size_t i = 0; i < kTrailerPayloadSize; ++i) {
          trailer[i] = static_cast<char>(index_offset >> (8 * i));
        }
        s = Write(EncodeRecord(RecordType::kTrailer, RecordEncoding::kRaw,
                               trailer));
      }
    }
  }
  absl::Status f = sink_->Flush(false);
  if (s.ok()) s = f;
  absl::Status c = sink_->Close();
  if (s.ok()) s = c;
  error_ = s;
  return s;
}

}  // namespace podscope::trace_format
