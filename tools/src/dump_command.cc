// `podscope dump`: asks a process's profiler server to write its flight
// recorder's last seconds into a session folder under the server's dump
// root (see <podscope/profiler/flight_recorder.h>).
#include <cstdio>
#include <string>
#include <vector>

#include "command.h"
#include "flags.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/session.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope dump --service_addr HOST:PORT[,HOST:PORT...] --session NAME
                     [--reason TEXT] [--token T] [--tls_ca FILE]
                     [--tls_server_name NAME]

Asks each process's profiler server to write the last seconds its flight
recorder keeps (30 s by default; $PODSCOPE_FLIGHT_RECORDER) into
  ROOT/NAME/<host>.<pid>.podtrace
where ROOT is the server's dump root (ServerOptions::dump_root or its
$PODSCOPE_DUMP_ROOT); the client names only the session. The folder opens
in the viewer, `podscope summary` and `podscope analyze` like any session.

Flags:
  --service_addr LIST   Profiler servers, comma-separated (required)
  --session NAME        The session folder: one plain folder name (letters,
                        digits, '-', '_', '.', ':', '+') (required)
  --reason TEXT         Why, kept in each file's metadata (default:
                        "on demand")
  --token T             Token for servers that require one (default:
                        $PODSCOPE_PROFILER_TOKEN, else for loopback
                        servers this user's token file)
  --tls_ca FILE         Speak TLS; FILE is the PEM certificate (or its CA)
                        the servers present
  --tls_server_name N   Name to check the certificate against instead of
                        the address's host
  --connect_timeout_ms N  How long to wait for each server (default 5000)
  -h, --help            Show this help

Prints one line per server: the file under its root, or why not.
Exit codes: 0 every server wrote its file, 5 some did not, 6 none did,
2 usage error.
)";

constexpr int kExitSomeFailed = 5;
constexpr int kExitNoneAnswered = 6;

int Run(std::span<const std::string> args, const CommandIo& io) {
  std::string addrs, session, reason = "on demand", token, tls_ca, tls_name;
  int64_t connect_ms = 5000;
  FlagParser flags;
  flags.AddString("service_addr", &addrs);
  flags.AddString("session", &session);
  flags.AddString("reason", &reason);
  flags.AddString("token", &token);
  flags.AddString("tls_ca", &tls_ca);
  flags.AddString("tls_server_name", &tls_name);
  flags.AddInt("connect_timeout_ms", &connect_ms, 1, 600'000);
  std::vector<std::string> positional;
  bool help = false;
  if (absl::Status s = flags.Parse(args, &positional, &help); !s.ok()) {
    return UsageError(io, "dump", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kDumpCommand);
  if (!positional.empty()) {
    return UsageError(io, "dump",
                      "unexpected argument '" + positional[0] + "'");
  }
  if (session.empty()) return UsageError(io, "dump", "--session is required");
  if (!profiler::IsValidSessionId(session)) {
    return UsageError(io, "dump",
                      "--session '" + session +
                          "' is not one plain folder name (letters, digits, "
                          "'-', '_', '.', ':', '+'; not starting with '.' or "
                          "'-')");
  }
  std::vector<std::string> servers;
  size_t start = 0;
  while (start <= addrs.size()) {
    size_t comma = addrs.find(',', start);
    if (comma == std::string::npos) comma = addrs.size();
    std::string addr = addrs.substr(start, comma - start);
    while (!addr.empty() && addr.front() == ' ') addr.erase(0, 1);
    while (!addr.empty() && addr.back() == ' ') addr.pop_back();
    if (!addr.empty()) {
      if (addr.find(':') == std::string::npos) {
        return UsageError(io, "dump",
                          "server '" + addr + "' has no port (HOST:PORT)");
      }
      servers.push_back(addr);
    }
    start = comma + 1;
  }
  if (servers.empty()) {
    return UsageError(io, "dump", "--service_addr is required");
  }
  profiler::ConnectOptions connect;
  connect.token = token;
  connect.tls_ca_file = tls_ca;
  connect.tls_server_name = tls_name;
  connect.connect_timeout_ms = connect_ms;
  int failed = 0;
  for (const std::string& server : servers) {
    auto dump =
        profiler::RequestFlightRecorderDump(server, connect, session, reason);
    if (!dump.ok()) {
      ++failed;
      std::fprintf(io.err, "podscope dump: %s\n",
                   std::string(dump.status().message()).c_str());
      continue;
    }
    std::fprintf(io.out, "%s: %s (%llu events, %llu bytes)\n", server.c_str(),
                 dump->path.c_str(),
                 static_cast<unsigned long long>(dump->events),
                 static_cast<unsigned long long>(dump->bytes));
  }
  if (failed == 0) return kExitOk;
  return failed == static_cast<int>(servers.size()) ? kExitNoneAnswered
                                                    : kExitSomeFailed;
}

}  // namespace

const Command kDumpCommand = {
    "dump",
    "Ask profiler servers to write their flight recorder's last seconds", kHelp,
    Run};

}  // namespace podscope::tools
