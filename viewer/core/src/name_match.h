// Which of a store's strings a user's text matches: a substring (optionally
// ignoring case) or an ECMAScript regex found anywhere in the string.
#ifndef PODSCOPE_VIEWER_SRC_NAME_MATCH_H_
#define PODSCOPE_VIEWER_SRC_NAME_MATCH_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::internal {

// matches[id] for every string id of the store.
absl::StatusOr<std::vector<char>> MatchNames(
    const TraceStore& store, const std::vector<std::string>& patterns,
    bool regex, bool case_sensitive);

// The tracks to visit: `tracks`, or every track when it is empty.
std::vector<TrackId> TracksOrAll(const TraceStore& store,
                                 const std::vector<TrackId>& tracks);

}  // namespace podscope::viewer::internal

#endif  // PODSCOPE_VIEWER_SRC_NAME_MATCH_H_
