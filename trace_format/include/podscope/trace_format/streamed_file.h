// Writes a trace file that arrives as a byte stream, as a remote capture
// delivers it: whole records go to disk as soon as they arrive (so a stream
// cut short leaves a file readable up to its last whole record), while the
// index and trailer are held back so that the receiver can add records of
// its own (the clock offsets it measured) before the file is closed.
#ifndef PODSCOPE_TRACE_FORMAT_STREAMED_FILE_H_
#define PODSCOPE_TRACE_FORMAT_STREAMED_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {

class StreamedFile {
 public:
  // Creates (truncates) `path`.
  static absl::StatusOr<std::unique_ptr<StreamedFile>> Create(
      const std::string& path);
  // Writes into `fd`, a new file the caller created (taken over); `path`
  // names it in errors.
  static std::unique_ptr<StreamedFile> Adopt(int fd, std::string path);

  // The next bytes of the stream, cut anywhere. Fails (and writes nothing
  // more) when the stream does not start with a trace file header or holds
  // an impossible record length.
  absl::Status Append(std::string_view bytes);

  // Appends a record of the receiver's (compressed protobuf).
  absl::Status AddRecord(RecordType type,
                         const google::protobuf::MessageLite& message);

  // Writes the held-back index, now listing the added records, and a new
  // trailer. Without an index from the stream the file is left without one
  // (the sender died: readers scan it and report it as recovered), unless
  // `build_index`: the sender ended the stream on purpose before its own
  // file was closed (a process that goes on tracing itself), so the index
  // is built here from the records received, and the file is complete,
  // unless some of them are damaged (a bad CRC, garbage between records, a
  // chunk that does not decode): then no index is written, so that readers
  // scan the file and report the damage, and damage() lists it. Bytes of a
  // torn last record are dropped. With `sync`, the file's data is on disk
  // (fdatasync) before it is closed, and a failure to get it there is the
  // result. Idempotent.
  absl::Status Finish(bool build_index = false, bool sync = false);

  // True when the stream delivered its index (the sender closed the file),
  // or once Finish(true) has built one.
  bool complete() const { return !index_record_.empty() || index_built_; }
  // What Finish(true) found damaged in the records received, as a reader
  // reports it.
  const std::vector<SkippedRange>& damage() const { return damage_; }
  uint64_t bytes_written() const { return offset_; }
  uint64_t bytes_received() const { return received_; }

 private:
  StreamedFile(std::string path, std::unique_ptr<RecordSink> sink)
      : path_(std::move(path)), sink_(std::move(sink)) {}
  absl::Status Write(std::string_view bytes);
  // An index of the records on disk (chunk ranges from decoding them).
  absl::StatusOr<proto::Index> BuildIndex();
  absl::Status WriteIndexAndTrailer(std::string payload);

  std::string path_;

  std::unique_ptr<RecordSink> sink_;
  std::string pending_;  // bytes of a record not yet whole
  bool header_done_ = false;
  bool finished_ = false;
  absl::Status error_;
  uint64_t offset_ = 0;
  uint64_t received_ = 0;
  std::string index_record_;  // framed, as received
  struct Added {
    RecordType type;
    uint64_t offset;
    uint64_t length;
  };
  std::vector<Added> added_;
  // The stream's records other than chunks, index and trailer, as written.
  std::vector<Added> streamed_;
  bool index_built_ = false;
  std::vector<SkippedRange> damage_;
};

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_STREAMED_FILE_H_
