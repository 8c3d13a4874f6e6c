#include "name_match.h"

#include <regex>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace podscope::viewer::internal {

absl::StatusOr<std::vector<char>> MatchNames(
    const TraceStore& store, const std::vector<std::string>& patterns,
    bool regex, bool case_sensitive) {
  std::vector<char> matches(store.string_count(), 0);
  if (regex) {
    std::vector<std::regex> compiled;
    for (const std::string& p : patterns) {
      auto flags = std::regex::ECMAScript | std::regex::optimize;
      if (!case_sensitive) flags |= std::regex::icase;
      try {
        compiled.emplace_back(p, flags);
      } catch (const std::regex_error& e) {
        return absl::InvalidArgumentError(
            absl::StrCat("invalid regular expression '", p, "': ", e.what()));
      }
    }
    for (size_t id = 1; id < matches.size(); ++id) {
      const std::string_view s = store.str(static_cast<StringId>(id));
      for (const std::regex& re : compiled) {
        if (std::regex_search(s.begin(), s.end(), re)) {
          matches[id] = 1;
          break;
        }
      }
    }
    return matches;
  }
  std::vector<std::string> needles;
  for (const std::string& p : patterns) {
    needles.push_back(case_sensitive ? p : absl::AsciiStrToLower(p));
  }
  for (size_t id = 1; id < matches.size(); ++id) {
    const std::string_view s = store.str(static_cast<StringId>(id));
    const std::string lowered =
        case_sensitive
            ? std::string()
            : absl::AsciiStrToLower(absl::string_view(s.data(), s.size()));
    const std::string_view hay = case_sensitive ? s : std::string_view(lowered);
    for (const std::string& n : needles) {
      if (hay.find(n) != std::string_view::npos) {
        matches[id] = 1;
        break;
      }
    }
  }
  return matches;
}

std::vector<TrackId> TracksOrAll(const TraceStore& store,
                                 const std::vector<TrackId>& tracks) {
  std::vector<TrackId> out;
  if (tracks.empty()) {
    for (TrackId t = 0; t < store.tracks().size(); ++t) out.push_back(t);
  } else {
    for (TrackId t : tracks) {
      if (t < store.tracks().size()) out.push_back(t);
    }
  }
  return out;
}

}  // namespace podscope::viewer::internal
