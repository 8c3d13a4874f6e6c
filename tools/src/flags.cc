#include "flags.h"

#include <charconv>

#include "absl/strings/str_cat.h"

namespace podscope::tools {

void FlagParser::AddBool(std::string_view name, bool* value) {
  flags_.push_back({std::string(name), 0, Kind::kBool, value});
}

void FlagParser::AddString(std::string_view name, std::string* value,
                           char short_name) {
  flags_.push_back({std::string(name), short_name, Kind::kString, value});
}

void FlagParser::AddStrings(std::string_view name,
                            std::vector<std::string>* values) {
  flags_.push_back({std::string(name), 0, Kind::kStrings, values});
}

void FlagParser::AddInt(std::string_view name, int64_t* value, int64_t min,
                        int64_t max) {
  flags_.push_back({std::string(name), 0, Kind::kInt, value, min, max});
}

const FlagParser::Flag* FlagParser::Find(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const FlagParser::Flag* FlagParser::FindShort(char name) const {
  for (const Flag& f : flags_) {
    if (f.short_name != 0 && f.short_name == name) return &f;
  }
  return nullptr;
}

absl::Status FlagParser::Set(const Flag& flag, std::string_view spelled,
                             std::string_view value) const {
  switch (flag.kind) {
    case Kind::kBool:
      *static_cast<bool*>(flag.value) = true;
      return absl::OkStatus();
    case Kind::kString:
      *static_cast<std::string*>(flag.value) = std::string(value);
      return absl::OkStatus();
    case Kind::kStrings:
      static_cast<std::vector<std::string>*>(flag.value)->emplace_back(value);
      return absl::OkStatus();
    case Kind::kInt: {
      int64_t n = 0;
      const char* end = value.data() + value.size();
      auto [ptr, ec] = std::from_chars(value.data(), end, n);
      if (value.empty() || ec != std::errc() || ptr != end) {
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(spelled), " expects a whole number, got '",
                         std::string(value), "'"));
      }
      if (n < flag.min || n > flag.max) {
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(spelled), " expects a number from ",
                         flag.min, " to ", flag.max, ", got ", n));
      }
      *static_cast<int64_t*>(flag.value) = n;
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status FlagParser::Parse(std::span<const std::string> args,
                               std::vector<std::string>* positional,
                               bool* help) const {
  *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional->insert(positional->end(), args.begin() + i + 1, args.end());
      return absl::OkStatus();
    }
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return absl::OkStatus();
    }
    // "-" alone is an argument by convention (standard input or output).
    if (arg.size() < 2 || arg[0] != '-') {
      positional->push_back(arg);
      continue;
    }
    const Flag* flag = nullptr;
    std::string spelled;
    std::string_view inline_value;
    bool has_inline_value = false;
    if (arg[1] == '-') {
      std::string_view body = std::string_view(arg).substr(2);
      const size_t eq = body.find('=');
      if (eq != std::string_view::npos) {
        inline_value = body.substr(eq + 1);
        has_inline_value = true;
        body = body.substr(0, eq);
      }
      spelled = absl::StrCat("--", std::string(body));
      flag = Find(body);
    } else if (arg.size() == 2) {
      spelled = arg;
      flag = FindShort(arg[1]);
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag '", has_inline_value ? spelled : arg, "'"));
    }
    if (flag->kind == Kind::kBool) {
      if (has_inline_value) {
        return absl::InvalidArgumentError(
            absl::StrCat(spelled, " takes no value"));
      }
      if (auto s = Set(*flag, spelled, ""); !s.ok()) return s;
      continue;
    }
    std::string_view value = inline_value;
    if (!has_inline_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(spelled, " needs a value"));
      }
      value = args[++i];
    }
    if (auto s = Set(*flag, spelled, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace podscope::tools
