// Help, version and usage errors of the `podscope` binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "run_podscope.h"

namespace podscope::tools::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(Help, TopLevelListsCommandsAndExitCodes) {
  for (const char* flag : {"--help", "-h"}) {
    const RunResult r = RunPodscope({flag});
    EXPECT_EQ(r.exit_code, 0) << flag;
    EXPECT_THAT(r.out, HasSubstr("Usage: podscope <command>"));
    for (const char* command : {"check", "summary", "export", "help"}) {
      EXPECT_THAT(r.out, HasSubstr("\n  " + std::string(command) + " "));
    }
    EXPECT_THAT(r.out, HasSubstr("Exit codes:"));
    EXPECT_THAT(r.out, HasSubstr("4  internal or I/O error"));
    EXPECT_EQ(r.err, "");
  }
  const RunResult help = RunPodscope({"help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("Usage: podscope <command>"));
}

TEST(Help, EveryCommandHasHelpInEverySpelling) {
  for (const char* command : {"check", "summary", "export"}) {
    const std::string usage = "Usage: podscope " + std::string(command);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"help", command},
          std::vector<std::string>{command, "--help"},
          std::vector<std::string>{command, "-h"}}) {
      const RunResult r = RunPodscope(args);
      EXPECT_EQ(r.exit_code, 0) << args[0] << " " << args[1];
      EXPECT_THAT(r.out, StartsWith(usage));
      EXPECT_THAT(r.out, HasSubstr("Exit codes:"));
    }
  }
}

TEST(Help, VersionPrintsTheProjectVersion) {
  const RunResult r = RunPodscope({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, StartsWith("podscope " PODSCOPE_TEST_VERSION " "));
}

// Runs podscope with `args` and expects a usage error whose message holds
// `what` and a hint to run --help.
void ExpectUsageError(const std::vector<std::string>& args,
                      const std::string& what) {
  const RunResult r = RunPodscope(args);
  std::string joined;
  for (const std::string& a : args) joined += a + " ";
  EXPECT_EQ(r.exit_code, 2) << joined;
  EXPECT_THAT(r.err, HasSubstr(what)) << joined;
  EXPECT_THAT(r.err, HasSubstr("--help' for usage.")) << joined;
  EXPECT_EQ(r.out, "") << joined;
}

TEST(UsageErrors, UnknownCommandsAndFlags) {
  ExpectUsageError({"frob"}, "unknown command 'frob'");
  ExpectUsageError({"--frob"}, "unknown flag '--frob'");
  ExpectUsageError({"help", "frob"}, "unknown command 'frob'");
  ExpectUsageError({"check", "--bogus", "x.podtrace"},
                   "podscope check: unknown flag '--bogus'");
  ExpectUsageError({"summary", "--bogus=3", "x"}, "unknown flag '--bogus'");
  ExpectUsageError({"export", "-x"}, "unknown flag '-x'");
}

TEST(UsageErrors, MissingAndMalformedArguments) {
  ExpectUsageError({"check"}, "expects at least one FILE");
  ExpectUsageError({"check", "--json"}, "expects at least one FILE");
  ExpectUsageError({"summary"}, "expects a PATH");
  ExpectUsageError({"summary", "a", "b"}, "expects one PATH");
  ExpectUsageError({"summary", "--top", "abc", "x"},
                   "--top expects a whole number, got 'abc'");
  ExpectUsageError({"summary", "--top", "-3", "x"}, "--top expects a number");
  ExpectUsageError({"summary", "x", "--top"}, "--top needs a value");
  ExpectUsageError({"export", "x", "-o", "y"}, "--format is required");
  ExpectUsageError({"export", "--format", "xml", "x", "-o", "y"},
                   "unknown --format 'xml'");
  ExpectUsageError({"export", "--format", "chrome", "x"}, "-o OUT is required");
  ExpectUsageError({"export", "--format", "chrome", "x", "-o"},
                   "-o needs a value");
  ExpectUsageError({"export", "--format", "chrome", "-o", "y"},
                   "expects a PATH");
  ExpectUsageError({"export", "--gzip=1"}, "--gzip takes no value");
  ExpectUsageError({"doctor", "--once"}, "--job is required");
  ExpectUsageError({"doctor", "--job", "127.0.0.1:1", "x"},
                   "unexpected argument 'x'");
  ExpectUsageError({"doctor", "--job", "127.0.0.1:1", "--interval_ms", "0"},
                   "--interval_ms");
  ExpectUsageError({"launch", "--on_stall", "maybe", "prog"},
                   "--on_stall 'maybe': expected report or fail");
}

TEST(UsageErrors, BareCommandShowsHelpOnStderr) {
  const RunResult r = RunPodscope({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("Usage: podscope <command>"));
}

}  // namespace
}  // namespace podscope::tools::testing
