// query_fast.h: the strict recogniser of the shape the native path runs.
// It sees only statements SQLite has already prepared without error, so
// it never has to explain a mistake: whatever is not exactly the shape
// (a quoted identifier, a comment, a real literal, OR, a function other
// than the six aggregates, an alias that could shadow a column) returns
// nullopt and SQLite answers.
#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "query_fast.h"

namespace podscope::viewer::query {
namespace {

enum class Tok { kWord, kInt, kText, kPunct, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;  // words and punctuation as written
  int64_t number = 0;     // kInt
  std::string value;      // kText, unquoted
};

bool IsWordStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Splits `sql` into tokens; nullopt at anything outside the shape's
// vocabulary (non-ASCII, comments, quoted identifiers, blobs, parameters,
// real or hex numbers, integers past int64).
std::optional<std::vector<Token>> Tokenize(std::string_view sql) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      ++i;
      continue;
    }
    Token t;
    if (IsWordStart(c)) {
      size_t j = i + 1;
      while (j < sql.size() && IsWordChar(sql[j])) ++j;
      t.kind = Tok::kWord;
      t.text = sql.substr(i, j - i);
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      uint64_t v = 0;
      for (; j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j]));
           ++j) {
        const uint64_t digit = static_cast<uint64_t>(sql[j] - '0');
        if (v > (uint64_t{std::numeric_limits<int64_t>::max()} - digit) / 10) {
          return std::nullopt;  // SQLite reads it as a REAL
        }
        v = v * 10 + digit;
      }
      if (j < sql.size() && (IsWordChar(sql[j]) || sql[j] == '.')) {
        return std::nullopt;  // 1e3, 0x10, 1.5
      }
      t.kind = Tok::kInt;
      t.number = static_cast<int64_t>(v);
      t.text = sql.substr(i, j - i);
      i = j;
    } else if (c == '\'') {
      size_t j = i + 1;
      std::string value;
      while (true) {
        if (j >= sql.size()) return std::nullopt;
        if (sql[j] == '\'') {
          if (j + 1 < sql.size() && sql[j + 1] == '\'') {
            value += '\'';
            j += 2;
            continue;
          }
          ++j;
          break;
        }
        value += sql[j++];
      }
      t.kind = Tok::kText;
      t.value = std::move(value);
      t.text = sql.substr(i, j - i);
      i = j;
    } else {
      static constexpr std::string_view kTwo[] = {"<=", ">=", "!=", "<>", "=="};
      size_t len = 0;
      for (std::string_view two : kTwo) {
        if (sql.substr(i, 2) == two) len = 2;
      }
      if (len == 0) {
        if (std::string_view("(),*=<>-;").find(c) == std::string_view::npos) {
          return std::nullopt;
        }
        len = 1;
      }
      t.kind = Tok::kPunct;
      t.text = sql.substr(i, len);
      i += len;
    }
    out.push_back(std::move(t));
  }
  // Trailing semicolons end the one statement (Run refuses a second).
  while (!out.empty() && out.back().kind == Tok::kPunct &&
         out.back().text == ";") {
    out.pop_back();
  }
  out.push_back(Token{});
  return out;
}

bool SameWord(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Every column of `slices`, fast or not: an alias spelled like one of
// them could change what a name in ORDER BY or WHERE means.
constexpr std::string_view kSliceColumns[] = {
    "id",       "host", "pid", "rank",  "track",     "thread", "name",
    "category", "ts",   "dur", "depth", "parent_id", "args"};

// Words an alias must not be: they end or continue a clause.
constexpr std::string_view kKeywords[] = {
    "select",    "from",     "where",   "group", "by",      "order", "limit",
    "offset",    "and",      "or",      "not",   "between", "as",    "asc",
    "desc",      "having",   "collate", "nulls", "is",      "in",    "like",
    "glob",      "escape",   "window",  "over",  "filter",  "union", "except",
    "intersect", "distinct", "all",     "join",  "on",      "using", "natural"};

std::optional<FastColumn> ColumnNamed(std::string_view word) {
  static constexpr std::pair<std::string_view, FastColumn> kFast[] = {
      {"name", FastColumn::kName},     {"host", FastColumn::kHost},
      {"thread", FastColumn::kThread}, {"rank", FastColumn::kRank},
      {"pid", FastColumn::kPid},       {"track", FastColumn::kTrack},
      {"ts", FastColumn::kTs},         {"dur", FastColumn::kDur},
      {"depth", FastColumn::kDepth}};
  for (const auto& [n, c] : kFast) {
    if (SameWord(word, n)) return c;
  }
  return std::nullopt;
}

bool IsText(FastColumn c) {
  return c == FastColumn::kName || c == FastColumn::kHost ||
         c == FastColumn::kThread;
}

// Columns a GROUP BY may use: few distinct values (not ts or dur).
bool Groupable(FastColumn c) {
  return c != FastColumn::kTs && c != FastColumn::kDur;
}

constexpr size_t kMaxOutputs = 64, kMaxPredicates = 32, kMaxTerms = 16;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  std::optional<FastPlan> Parse() {
    if (!Word("select")) return std::nullopt;
    std::vector<std::string_view> aliases;
    do {
      auto out = Output();
      if (!out) return std::nullopt;
      std::string_view alias;
      if (Word("as")) {
        if (!AliasWord()) return std::nullopt;
        alias = t_[at_++].text;
        for (std::string_view other : aliases) {
          if (SameWord(other, alias)) return std::nullopt;
        }
      }
      plan_.outputs.push_back(*out);
      aliases.push_back(alias);
    } while (Punct(","));
    plan_.visible = plan_.outputs.size();
    if (!Word("from") || !Word("slices")) return std::nullopt;
    if (Word("where")) {
      do {
        if (!Predicate()) return std::nullopt;
      } while (Word("and"));
    }
    if (Word("group")) {
      if (!Word("by")) return std::nullopt;
      do {
        auto c = Column();
        if (!c || !Groupable(*c)) return std::nullopt;
        plan_.group_by.push_back(*c);
      } while (Punct(","));
    }
    if (Word("order")) {
      if (!Word("by")) return std::nullopt;
      do {
        if (!OrderTerm(aliases)) return std::nullopt;
      } while (Punct(","));
    }
    if (Word("limit")) {
      if (!Count(&plan_.limit.emplace())) return std::nullopt;
      if (Word("offset")) {
        if (!Count(&plan_.offset)) return std::nullopt;
      } else if (Punct(",")) {
        // LIMIT offset, count
        plan_.offset = *plan_.limit;
        if (!Count(&*plan_.limit)) return std::nullopt;
      }
    }
    if (t_[at_].kind != Tok::kEnd) return std::nullopt;
    return Check() ? std::optional<FastPlan>(std::move(plan_)) : std::nullopt;
  }

 private:
  bool Word(std::string_view w) {
    if (t_[at_].kind == Tok::kWord && SameWord(t_[at_].text, w)) {
      ++at_;
      return true;
    }
    return false;
  }
  bool Punct(std::string_view p) {
    if (t_[at_].kind == Tok::kPunct && t_[at_].text == p) {
      ++at_;
      return true;
    }
    return false;
  }
  bool AliasWord() const {
    if (t_[at_].kind != Tok::kWord) return false;
    for (std::string_view c : kSliceColumns) {
      if (SameWord(t_[at_].text, c)) return false;
    }
    for (std::string_view k : kKeywords) {
      if (SameWord(t_[at_].text, k)) return false;
    }
    return true;
  }
  std::optional<FastColumn> Column() {
    if (t_[at_].kind != Tok::kWord) return std::nullopt;
    auto c = ColumnNamed(t_[at_].text);
    if (c) ++at_;
    return c;
  }
  // An aggregate call, or nullopt (the caller rewinds).
  std::optional<FastOutput> Aggregate() {
    static constexpr std::pair<std::string_view, FastAgg> kAggs[] = {
        {"count", FastAgg::kCount}, {"sum", FastAgg::kSum},
        {"total", FastAgg::kTotal}, {"avg", FastAgg::kAvg},
        {"min", FastAgg::kMin},     {"max", FastAgg::kMax}};
    if (t_[at_].kind != Tok::kWord) return std::nullopt;
    for (const auto& [n, agg] : kAggs) {
      if (!SameWord(t_[at_].text, n)) continue;
      ++at_;
      FastOutput out;
      out.agg = agg;
      if (!Punct("(")) return std::nullopt;
      if (agg == FastAgg::kCount && Punct("*")) {
        out.star = true;
      } else {
        auto c = Column();
        // Aggregates of text (other than count) compare and convert text;
        // SQLite does that.
        if (!c || (agg != FastAgg::kCount && IsText(*c))) return std::nullopt;
        out.column = *c;
      }
      if (!Punct(")")) return std::nullopt;
      return out;
    }
    return std::nullopt;
  }
  std::optional<FastOutput> Output() {
    const size_t start = at_;
    if (auto agg = Aggregate()) return agg;
    at_ = start;
    auto c = Column();
    if (!c) return std::nullopt;
    FastOutput out;
    out.column = *c;
    return out;
  }
  bool Literal(bool text, FastPredicate* p) {
    if (text) {
      if (t_[at_].kind != Tok::kText) return false;
      p->text = t_[at_++].value;
      return true;
    }
    const bool negative = Punct("-");
    if (t_[at_].kind != Tok::kInt) return false;
    p->number = negative ? -t_[at_].number : t_[at_].number;
    ++at_;
    return true;
  }
  bool Predicate() {
    auto c = Column();
    if (!c) return false;
    FastPredicate p;
    p.column = *c;
    if (Word("between")) {
      FastPredicate high = p;
      p.op = FastOp::kGe;
      high.op = FastOp::kLe;
      if (!Literal(IsText(*c), &p) || !Word("and") ||
          !Literal(IsText(*c), &high)) {
        return false;
      }
      plan_.where.push_back(std::move(p));
      plan_.where.push_back(std::move(high));
      return true;
    }
    static constexpr std::pair<std::string_view, FastOp> kOps[] = {
        {"=", FastOp::kEq},  {"==", FastOp::kEq}, {"!=", FastOp::kNe},
        {"<>", FastOp::kNe}, {"<", FastOp::kLt},  {"<=", FastOp::kLe},
        {">", FastOp::kGt},  {">=", FastOp::kGe}};
    bool found = false;
    for (const auto& [text, op] : kOps) {
      if (Punct(text)) {
        p.op = op;
        found = true;
        break;
      }
    }
    if (!found || !Literal(IsText(*c), &p)) return false;
    plan_.where.push_back(std::move(p));
    return true;
  }
  // The output an ORDER BY term reads, added as a hidden one if the
  // SELECT list lacks it.
  bool OrderTerm(const std::vector<std::string_view>& aliases) {
    FastOrder o;
    if (t_[at_].kind == Tok::kInt) {
      const int64_t k = t_[at_++].number;
      if (k < 1 || static_cast<uint64_t>(k) > plan_.visible) return false;
      o.output = static_cast<size_t>(k - 1);
    } else {
      bool matched = false;
      if (t_[at_].kind == Tok::kWord) {
        for (size_t i = 0; i < aliases.size(); ++i) {
          if (!aliases[i].empty() && SameWord(aliases[i], t_[at_].text)) {
            o.output = i;
            matched = true;
            ++at_;
            break;
          }
        }
      }
      if (!matched) {
        auto out = Output();
        if (!out) return false;
        o.output = plan_.outputs.size();
        for (size_t i = 0; i < plan_.outputs.size(); ++i) {
          if (plan_.outputs[i] == *out) o.output = i;
        }
        if (o.output == plan_.outputs.size()) plan_.outputs.push_back(*out);
      }
    }
    if (Word("desc")) {
      o.desc = true;
    } else {
      Word("asc");
    }
    plan_.order_by.push_back(o);
    return true;
  }
  bool Count(int64_t* out) {
    if (t_[at_].kind != Tok::kInt) return false;
    *out = t_[at_++].number;
    return true;
  }
  // An aggregate query whose bare columns are all grouped, of a size
  // whose checks stay small (SQLite already bounds every list at 2,000
  // terms; the native path wants far fewer).
  bool Check() const {
    if (plan_.outputs.size() > kMaxOutputs ||
        plan_.where.size() > kMaxPredicates ||
        plan_.group_by.size() > kMaxTerms ||
        plan_.order_by.size() > kMaxTerms) {
      return false;
    }
    bool aggregate = !plan_.group_by.empty();
    for (const FastOutput& o : plan_.outputs) {
      if (o.agg != FastAgg::kNone) aggregate = true;
    }
    if (!aggregate) return false;
    for (const FastOutput& o : plan_.outputs) {
      if (o.agg != FastAgg::kNone) continue;
      bool grouped = false;
      for (FastColumn g : plan_.group_by) grouped |= g == o.column;
      if (!grouped) return false;
    }
    return true;
  }

  std::vector<Token> t_;
  size_t at_ = 0;
  FastPlan plan_;
};

}  // namespace

std::optional<FastPlan> ParseFastQuery(std::string_view sql) {
  auto tokens = Tokenize(sql);
  if (!tokens) return std::nullopt;
  return Parser(std::move(*tokens)).Parse();
}

}  // namespace podscope::viewer::query
