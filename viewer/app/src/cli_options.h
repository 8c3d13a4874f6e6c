// The command line of podscope-viewer (after Qt took its own options).
#ifndef PODSCOPE_VIEWER_APP_CLI_OPTIONS_H_
#define PODSCOPE_VIEWER_APP_CLI_OPTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "time_format.h"

namespace podscope::viewer::app {

struct CliOptions {
  std::string path;        // file, session folder or logdir; may be empty
  std::string session;     // --session: a logdir's session folder name
  std::string follow;      // --follow DIR: a session folder being written
  std::string screenshot;  // --screenshot OUT.png
  std::optional<TimeRangeSpec> range;
  int width = 1600;
  int height = 1000;
  bool size_given = false;
  bool verbose = false;
  bool help = false;
  bool version = false;
};

// Parses argv[1..]; nullopt with `error` naming the flag and what was
// expected (the caller exits with status 2).
std::optional<CliOptions> ParseCommandLine(const std::vector<std::string>& args,
                                           std::string* error);

// The --help text.
std::string UsageText();

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_CLI_OPTIONS_H_
