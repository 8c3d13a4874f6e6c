// podscope-viewer [options] [PATH]: the desktop viewer, or with
// --screenshot a renderer of the main window to an image.
#include <QApplication>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli_options.h"
#include "main_window.h"
#include "screenshot.h"

namespace {

// Qt's own options (QGuiApplication's), left for QApplication to take.
bool IsQtOption(const std::string& a, bool* takes_value) {
  static const char* const kWithValue[] = {
      "-platform",      "-platformpluginpath",
      "-platformtheme", "-plugin",
      "-qmljsdebugger", "-style",
      "-stylesheet",    "-display",
      "-geometry",      "-title",
      "-qwindowtitle",  "-qwindowgeometry",
      "-qwindowicon",   "-session",
      "-font",          "-fn",
      "-background",    "-bg",
      "-foreground",    "-fg",
      "-name"};
  static const char* const kFlags[] = {"-reverse", "-widgetcount", "-sync",
                                       "-nograb",  "-dograb",      "-visual",
                                       "-ncols",   "-cmap"};
  *takes_value = false;
  if (a.size() < 2 || a[0] != '-' || a[1] == '-') return false;
  for (const char* f : kWithValue) {
    if (a == f) {
      *takes_value = true;
      return true;
    }
  }
  for (const char* f : kFlags) {
    if (a == f) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  namespace app = podscope::viewer::app;
  std::vector<std::string> ours;
  for (int i = 1; i < argc; ++i) {
    bool takes_value = false;
    if (IsQtOption(argv[i], &takes_value)) {
      if (takes_value) ++i;
      continue;
    }
    ours.emplace_back(argv[i]);
  }
  std::string error;
  const auto options = app::ParseCommandLine(ours, &error);
  if (!options) {
    std::fprintf(stderr, "podscope-viewer: %s\n", error.c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(app::UsageText().c_str(), stdout);
    return 0;
  }
  if (options->version) {
    std::printf("podscope-viewer %s\n", PODSCOPE_VERSION);
    return 0;
  }
  const bool headless = !options->screenshot.empty();
  if (headless && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") &&
      qEnvironmentVariableIsEmpty("DISPLAY") &&
      qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    // Rendering to a file needs no display.
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication application(argc, argv);
  QApplication::setApplicationName("podscope-viewer");
  QApplication::setOrganizationName("podscope");
  QApplication::setApplicationVersion(PODSCOPE_VERSION);
  if (headless) return app::RunScreenshot(*options);

  app::MainWindow window;
  window.RestoreWindowState();
  if (options->size_given) window.resize(options->width, options->height);
  window.show();
  if (!options->follow.empty()) {
    window.FollowPath(QString::fromStdString(options->follow));
  } else if (!options->path.empty()) {
    window.OpenPath(QString::fromStdString(options->path),
                    QString::fromStdString(options->session));
    if (options->range) {
      const app::TimeRangeSpec range = *options->range;
      // Only for the trace named on the command line, not later opens.
      auto pending = std::make_shared<bool>(true);
      QObject::connect(&window, &app::MainWindow::loaded, &window,
                       [&window, range, pending](bool ok) {
                         if (ok && *pending) app::ApplyRange(window, range);
                         *pending = false;
                       });
    }
  }
  return application.exec();
}
