// A small command-line flag parser for the podscope subcommands: long flags
// (`--top 5`, `--top=5`), optional one-letter aliases (`-o out.json`),
// `--` to end flags, and -h/--help. Errors name the flag and what was
// expected, so the caller can print them as they are.
#ifndef PODSCOPE_TOOLS_FLAGS_H_
#define PODSCOPE_TOOLS_FLAGS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace podscope::tools {

class FlagParser {
 public:
  // `--name`; sets *value to true.
  void AddBool(std::string_view name, bool* value);
  // `--name VALUE` or `--name=VALUE`; `short_name` ('o' for `-o`) is
  // optional.
  void AddString(std::string_view name, std::string* value,
                 char short_name = 0);
  // Like AddString, repeatable: each occurrence appends its value.
  void AddStrings(std::string_view name, std::vector<std::string>* values);
  // A whole number in [min, max].
  void AddInt(std::string_view name, int64_t* value, int64_t min, int64_t max);

  // Parses `args`: flags may come before, between or after the positional
  // arguments, which are appended to `positional`. `*help` is set when -h
  // or --help is given (parsing stops there). An InvalidArgument error
  // names the offending flag.
  absl::Status Parse(std::span<const std::string> args,
                     std::vector<std::string>* positional, bool* help) const;

 private:
  enum class Kind { kBool, kString, kStrings, kInt };
  struct Flag {
    std::string name;
    char short_name = 0;
    Kind kind = Kind::kBool;
    void* value = nullptr;
    int64_t min = 0;
    int64_t max = 0;
  };
  const Flag* Find(std::string_view name) const;
  const Flag* FindShort(char name) const;
  absl::Status Set(const Flag& flag, std::string_view spelled,
                   std::string_view value) const;

  std::vector<Flag> flags_;
};

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_FLAGS_H_
