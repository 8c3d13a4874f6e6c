#include "cli_options.h"

#include <cstdlib>

namespace podscope::viewer::app {
namespace {

bool ParseSize(const std::string& text, int* w, int* h) {
  const size_t x = text.find_first_of("xX");
  if (x == std::string::npos || x == 0 || x + 1 >= text.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i != x && (text[i] < '0' || text[i] > '9')) return false;
  }
  if (x > 5 || text.size() - x - 1 > 5) return false;
  *w = std::atoi(text.substr(0, x).c_str());
  *h = std::atoi(text.substr(x + 1).c_str());
  return *w >= 200 && *h >= 150 && *w <= 16384 && *h <= 16384;
}

}  // namespace

std::optional<CliOptions> ParseCommandLine(const std::vector<std::string>& args,
                                           std::string* error) {
  CliOptions o;
  bool only_paths = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string flag = a, value;
    bool has_value = false;
    if (!only_paths && a.rfind("--", 0) == 0 && a.size() > 2) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos) {
        flag = a.substr(0, eq);
        value = a.substr(eq + 1);
        has_value = true;
      }
    }
    auto take_value = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= args.size()) {
        *error = flag + " needs a value";
        return false;
      }
      value = args[++i];
      return true;
    };
    if (only_paths || a.empty() || a[0] != '-' || a == "-") {
      if (!o.path.empty()) {
        *error = "more than one path given ('" + o.path + "' and '" + a +
                 "'); open one file, session folder or logdir";
        return std::nullopt;
      }
      o.path = a;
    } else if (a == "--") {
      only_paths = true;
    } else if (flag == "-h" || flag == "--help") {
      o.help = true;
    } else if (flag == "--version") {
      o.version = true;
    } else if (flag == "-v" || flag == "--verbose") {
      o.verbose = true;
    } else if (flag == "--screenshot") {
      if (!take_value()) return std::nullopt;
      if (value.empty()) {
        *error = "--screenshot needs an output file name (e.g. out.png)";
        return std::nullopt;
      }
      o.screenshot = value;
    } else if (flag == "--range") {
      if (!take_value()) return std::nullopt;
      std::string why;
      auto r = ParseRange(value, &why);
      if (!r) {
        *error = "--range: " + why;
        return std::nullopt;
      }
      o.range = *r;
    } else if (flag == "--size") {
      if (!take_value()) return std::nullopt;
      if (!ParseSize(value, &o.width, &o.height)) {
        *error = "--size: '" + value +
                 "' is not a size (expected WxH, e.g. 1600x1000, from "
                 "200x150 to 16384x16384)";
        return std::nullopt;
      }
      o.size_given = true;
    } else if (flag == "--follow") {
      if (!take_value()) return std::nullopt;
      if (value.empty()) {
        *error = "--follow needs a session folder (or a .podtrace file)";
        return std::nullopt;
      }
      o.follow = value;
    } else if (flag == "--session") {
      if (!take_value()) return std::nullopt;
      o.session = value;
    } else {
      *error = "unknown flag '" + a + "' (see --help)";
      return std::nullopt;
    }
  }
  if (!o.follow.empty() && !o.path.empty()) {
    *error = "--follow " + o.follow + " and the path '" + o.path +
             "' both name what to open; give one";
    return std::nullopt;
  }
  if (!o.follow.empty() && !o.screenshot.empty()) {
    *error =
        "--follow shows files while they grow; it cannot be used with "
        "--screenshot";
    return std::nullopt;
  }
  if (!o.screenshot.empty() && o.path.empty()) {
    *error =
        "--screenshot needs a trace to render (a .podtrace file, a "
        "session folder or a logdir)";
    return std::nullopt;
  }
  return o;
}

std::string UsageText() {
  return R"(usage: podscope-viewer [options] [PATH]
       podscope-viewer --follow DIR

Opens a Podscope trace: a .podtrace file, a session folder of per-host
files, or a logdir of sessions (the newest one unless --session says).

options:
  --session NAME        the session folder of a logdir to open
  --follow DIR          show the trace files being written into DIR (a
                        session folder; processes recording with
                        StartTrace) as they grow, new files as they appear
  --range T0:T1         the time window to show, as offsets from the start
                        of the trace with a unit: ns, us, ms or s
                        (e.g. 10ms:12.5ms; an empty side is the trace's
                        start or end, e.g. 2s:)
  --screenshot OUT.png  render the main window to OUT.png and exit (works
                        without a display: QT_QPA_PLATFORM=offscreen)
  --size WxH            window size (default 1600x1000)
  -v, --verbose         with --screenshot: print the timeline's geometry
                        and window (for scripts and tests)
  -h, --help            this text
  --version             the version

exit status: 0 ok, 1 the trace could not be opened or the image not
written, 2 bad command line.
)";
}

}  // namespace podscope::viewer::app
