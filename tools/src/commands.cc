// The subcommand table, top-level help and dispatch.
#include <algorithm>
#include <string>

#include "command.h"
#include "podscope/trace_format/format.h"

#ifndef PODSCOPE_VERSION
#define PODSCOPE_VERSION "unknown"
#endif

namespace podscope::tools {
namespace {

constexpr const Command* kCommands[] = {
    &kCheckCommand,  &kSummaryCommand, &kAnalyzeCommand, &kDiffCommand,
    &kQueryCommand,  &kExportCommand,  &kCaptureCommand, &kDumpCommand,
    &kLaunchCommand, &kDoctorCommand,
};

constexpr std::string_view kExitCodes =
    "Exit codes:\n"
    "  0  success (check: every file intact)\n"
    "  1  check found damage but recovered what it could; diff: a\n"
    "     --fail_if condition held\n"
    "  2  usage error (unknown command or flag, missing or bad argument)\n"
    "  3  a file is unreadable or not found\n"
    "     (summary and export: nothing readable at PATH; unreadable files\n"
    "     beside readable ones are reported as warnings)\n"
    "  4  internal or I/O error (e.g. the output cannot be written)\n"
    "  5  capture: some workers did not answer (the others' files are\n"
    "     complete)\n"
    "  6  capture: no worker answered (doctor: the coordinator did not;\n"
    "     dump: no server wrote its file)\n"
    "  7, 8, 9  doctor: the job is stalled, desynced, has a dead rank\n"
    "  launch exits with the first failing worker's status (exit code, or\n"
    "  128 + signal; 75: the worker stopped because a peer died)\n";

void PrintTopLevelHelp(std::FILE* out) {
  std::string text =
      "podscope: capture, inspect, verify and convert Podscope traces.\n"
      "\n"
      "Usage: podscope <command> [flags] [arguments]\n"
      "       podscope help <command>\n"
      "       podscope --version\n"
      "\n"
      "Commands:\n";
  size_t width = 4;  // "help"
  for (const Command* c : kCommands) width = std::max(width, c->name.size());
  auto add = [&](std::string_view name, std::string_view description) {
    text += "  ";
    text += name;
    text.append(width - name.size() + 3, ' ');
    text += description;
    text += '\n';
  };
  for (const Command* c : kCommands) add(c->name, c->description);
  add("help", "Show the help of a command");
  text +=
      "\n"
      "Flags:\n"
      "  -h, --help   Show this help\n"
      "  --version    Show the version\n"
      "\n";
  text += kExitCodes;
  text += "\nRun 'podscope help <command>' for the flags of a command.\n";
  std::fputs(text.c_str(), out);
}

int RunHelp(std::span<const std::string> args, const CommandIo& io) {
  if (args.empty()) {
    PrintTopLevelHelp(io.out);
    return kExitOk;
  }
  if (args.size() > 1) {
    return UsageError(io, "help", "expects one command name");
  }
  const Command* command = FindCommand(args[0]);
  if (command == nullptr) {
    return UsageError(io, "help", "unknown command '" + args[0] + "'");
  }
  return PrintCommandHelp(io, *command);
}

}  // namespace

std::span<const Command* const> AllCommands() { return kCommands; }

const Command* FindCommand(std::string_view name) {
  for (const Command* c : kCommands) {
    if (c->name == name) return c;
  }
  return nullptr;
}

int UsageError(const CommandIo& io, std::string_view command,
               std::string_view message) {
  const std::string prefix =
      command.empty() ? "podscope" : "podscope " + std::string(command);
  std::fprintf(io.err, "%s: %.*s\n", prefix.c_str(),
               static_cast<int>(message.size()), message.data());
  std::fprintf(io.err, "Run '%s --help' for usage.\n", prefix.c_str());
  return kExitUsage;
}

int PrintCommandHelp(const CommandIo& io, const Command& command) {
  std::fwrite(command.help.data(), 1, command.help.size(), io.out);
  return kExitOk;
}

int RunPodscope(std::span<const std::string> args, const CommandIo& io) {
  if (args.empty()) {
    // Running the tool bare is asking for help, but a script that forgot
    // the command should still notice.
    PrintTopLevelHelp(io.err);
    return kExitUsage;
  }
  const std::string& first = args[0];
  if (first == "-h" || first == "--help") {
    PrintTopLevelHelp(io.out);
    return kExitOk;
  }
  if (first == "--version") {
    std::fprintf(io.out, "podscope %s (trace format %d.%d)\n", PODSCOPE_VERSION,
                 trace_format::kMajorVersion, trace_format::kMinorVersion);
    return kExitOk;
  }
  if (first == "help") return RunHelp(args.subspan(1), io);
  if (first.starts_with("-")) {
    return UsageError(io, "", "unknown flag '" + first + "'");
  }
  const Command* command = FindCommand(first);
  if (command == nullptr) {
    std::string names;
    for (const Command* c : kCommands) {
      names += names.empty() ? "" : ", ";
      names += c->name;
    }
    return UsageError(
        io, "",
        "unknown command '" + first + "' (commands: " + names + ", help)");
  }
  return command->run(args.subspan(1), io);
}

}  // namespace podscope::tools
