// `podscope`: see command.h for the subcommands and exit codes.
#include <unistd.h>

#include <string>
#include <vector>

#include "command.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  podscope::tools::CommandIo io;
  io.err_is_tty = isatty(STDERR_FILENO) == 1;
  const int code = podscope::tools::RunPodscope(args, io);
  // A full disk or a closed pipe on stdout must not pass for success.
  if (std::fflush(stdout) != 0 && code == podscope::tools::kExitOk) {
    std::perror("podscope: writing the output");
    return podscope::tools::kExitInternal;
  }
  return code;
}
