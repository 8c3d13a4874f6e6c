// A file's timestamps on the reference clock during a load: a
// trace_format::ClockModel and its Cursor, so the result is
// ClockModel::ToReference's, bit for bit and with its overflow guards, at
// the cost of a search only when a timestamp leaves the previous segment.
#ifndef PODSCOPE_VIEWER_CLOCK_MAPPER_H_
#define PODSCOPE_VIEWER_CLOCK_MAPPER_H_

#include <cstdint>

#include "podscope/trace_format/clock_model.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::viewer {

class ClockMapper {
 public:
  explicit ClockMapper(const trace_format::proto::ClockRecord& record)
      : model_(record), cursor_(model_) {}
  ClockMapper(const ClockMapper&) = delete;
  ClockMapper& operator=(const ClockMapper&) = delete;

  bool has_reference() const { return model_.has_reference(); }
  // Inlined, as the cursor's: it is called for every timestamp of a file.
  [[gnu::always_inline]] int64_t ToReference(int64_t local) {
    return cursor_.ToReference(local);
  }

 private:
  trace_format::ClockModel model_;
  trace_format::ClockModel::Cursor cursor_;
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_CLOCK_MAPPER_H_
