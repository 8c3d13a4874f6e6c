// The `podscope` command line: subcommands, their help, and the exit codes
// every subcommand shares.
//
// Exit codes (scripts rely on them; `podscope --help` lists them too):
//   0  success (check: every file intact)
//   1  check found damage but recovered data from every damaged file
//   2  usage error: unknown command or flag, missing or malformed argument
//   3  a file is unreadable or not found (check: any file; summary and
//      export: nothing readable at PATH, unreadable files beside readable
//      ones are warnings)
//   4  internal or I/O error, e.g. the output file cannot be written
//   5  capture: some workers did not answer (the others' files are complete)
//   6  capture: no worker answered (doctor: the coordinator did not; dump:
//      no server wrote its file)
//   7, 8, 9  doctor: the job is stalled, desynced, has a dead rank
//
// Adding a subcommand: write tools/src/<name>_command.cc defining a
// `Command`, declare it below and list it in commands.cc.
#ifndef PODSCOPE_TOOLS_COMMAND_H_
#define PODSCOPE_TOOLS_COMMAND_H_

#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace podscope::tools {

enum ExitCode : int {
  kExitOk = 0,
  kExitRecovered = 1,
  kExitUsage = 2,
  kExitUnreadable = 3,
  kExitInternal = 4,
};

// Where a command writes. Commands never touch stdout/stderr directly so
// that output stays testable and progress goes only to terminals.
struct CommandIo {
  std::FILE* out = stdout;
  std::FILE* err = stderr;
  // Progress lines are drawn only on a terminal; redirected stderr stays
  // clean for logs.
  bool err_is_tty = false;
};

struct Command {
  std::string_view name;
  // One line for the command list in `podscope --help`.
  std::string_view description;
  // The full text of `podscope help <name>`, starting with "Usage:".
  std::string_view help;
  // `args` are the arguments after the command name.
  int (*run)(std::span<const std::string> args, const CommandIo& io);
};

extern const Command kCheckCommand;
extern const Command kSummaryCommand;
extern const Command kAnalyzeCommand;
extern const Command kDiffCommand;
extern const Command kQueryCommand;
extern const Command kExportCommand;
extern const Command kCaptureCommand;
extern const Command kLaunchCommand;
extern const Command kDoctorCommand;
extern const Command kDumpCommand;

// Every command, in the order `--help` lists them.
std::span<const Command* const> AllCommands();
const Command* FindCommand(std::string_view name);

// Prints "podscope <command>: <message>" and a hint to run --help, and
// returns kExitUsage. `command` may be empty for top-level errors.
int UsageError(const CommandIo& io, std::string_view command,
               std::string_view message);

// Prints `command`'s help to io.out and returns kExitOk.
int PrintCommandHelp(const CommandIo& io, const Command& command);

// The top-level `podscope` entry point behind main().
int RunPodscope(std::span<const std::string> args, const CommandIo& io);

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_COMMAND_H_
