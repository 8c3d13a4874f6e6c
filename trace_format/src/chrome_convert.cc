#include "chrome_convert.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"

namespace podscope::trace_format::json_internal {
namespace od = simdjson::ondemand;
namespace {

// absl here has a string_view of its own.
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

// Kineto's categories of work that runs on a GPU stream.
bool IsGpuCategory(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" ||
         cat == "Kernel" || cat == "Memcpy" || cat == "Memset" ||
         absl::StartsWith(A(cat), "gpu_");
}
// Kineto's categories of the host calls that launch that work.
bool IsLaunchCategory(std::string_view cat) {
  return cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" ||
         cat == "Driver" || cat == "hip_runtime";
}

// A metadata attribute key (a proto `string`, which must be valid UTF-8)
// from a JSON member name: printable ASCII kept, any other byte '_'.
std::string AttributeKey(std::string_view prefix, std::string_view name) {
  std::string key(prefix);
  for (char c : name) {
    key.push_back(c >= 0x20 && c < 0x7f ? c : '_');
  }
  return key;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && absl::ascii_isspace(s.front())) s.remove_prefix(1);
  while (!s.empty() && absl::ascii_isspace(s.back())) s.remove_suffix(1);
  return s;
}

absl::Status AsStatus(const JsonEventStream& in, uint64_t offset,
                      simdjson::error_code err, std::string_view where) {
  return in.Error(offset,
                  absl::StrCat(A(where), ": ", simdjson::error_message(err)));
}

}  // namespace

std::optional<int64_t> MicrosToNs(std::string_view text) {
  // The common forms first: "123", "123.0", "123.125" with up to 15
  // integer digits, no sign and nothing after.
  {
    const size_t n = text.size();
    size_t i = 0;
    uint64_t whole = 0;
    while (i < n && i < 15 && static_cast<unsigned>(text[i] - '0') < 10) {
      whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
      ++i;
    }
    if (i > 0 && (i == n || !absl::ascii_isdigit(text[i]))) {
      uint64_t frac = 0;
      int digits = 0;
      if (i < n && text[i] == '.') {
        ++i;
        while (i < n && digits < 3 && absl::ascii_isdigit(text[i])) {
          frac = frac * 10 + static_cast<unsigned>(text[i] - '0');
          ++digits;
          ++i;
        }
        if (digits == 0) i = 0;  // "12." or "12.x": the general path
      }
      while (i > 0 && i < n && absl::ascii_isspace(text[i])) ++i;
      if (i == n) {
        for (; digits < 3; ++digits) frac *= 10;
        return static_cast<int64_t>(whole * 1000 + frac);
      }
    }
  }
  text = Trim(text);
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    text = Trim(text.substr(1, text.size() - 2));
  }
  if (text.empty()) return std::nullopt;
  bool negative = false;
  size_t i = 0;
  if (text[0] == '-') {
    negative = true;
    ++i;
  }
  __int128 whole = 0;
  size_t digits = 0;
  for (; i < text.size() && absl::ascii_isdigit(text[i]); ++i, ++digits) {
    whole = whole * 10 + (text[i] - '0');
    if (whole > (__int128{1} << 80)) return std::nullopt;
  }
  int64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && absl::ascii_isdigit(text[i]); ++i, ++digits) {
      if (frac_digits < 3) {
        frac = frac * 10 + (text[i] - '0');
        ++frac_digits;
      } else if (frac_digits == 3) {
        round_up = text[i] >= '5';
        ++frac_digits;
      }
    }
  }
  if (digits == 0) return std::nullopt;
  if (i < text.size()) {
    // An exponent (or junk): let the double parser decide.
    double d;
    if (!absl::SimpleAtod(A(text), &d) || !std::isfinite(d))
      return std::nullopt;
    const double ns = std::round(d * 1000.0);
    if (std::fabs(ns) >= 9.2e18) return std::nullopt;
    return static_cast<int64_t>(ns);
  }
  for (int k = std::min(frac_digits, 3); k < 3; ++k) frac *= 10;
  __int128 ns = whole * 1000 + frac + (round_up ? 1 : 0);
  if (negative) ns = -ns;
  if (ns > INT64_MAX || ns < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(ns);
}

ChromeConverter::ChromeConverter(TraceWriter* writer, JsonEventStream* in,
                                 uint32_t file_index)
    : w_(writer), in_(in), flow_base_(uint64_t{file_index + 1} << 40) {
  k_category_ = w_->InternString("category");
  k_unclosed_ = w_->InternString("unclosed");
}

absl::Status ChromeConverter::Run(const std::function<bool()>& tick) {
  uint64_t n = 0;
  while (true) {
    PODSCOPE_ASSIGN_OR_RETURN(auto item, in_->Next());
    if (item.kind == JsonItem::kEnd) break;
    absl::Status s =
        item.kind == JsonItem::kEvent ? HandleEvent(item) : HandleMember(item);
    if (!s.ok()) return s;
    if ((++n & 4095) == 0 && tick && !tick()) {
      return absl::CancelledError(absl::StrCat(in_->name(), ": cancelled"));
    }
  }
  return Finish();
}

absl::Status ChromeConverter::HandleMember(const JsonItem& item) {
  od::document doc;
  if (auto err =
          parser_.iterate(item.value.data(), item.value.size(), item.capacity)
              .get(doc)) {
    return AsStatus(*in_, item.offset, err,
                    absl::StrCat("member \"", A(item.key), "\""));
  }
  if (item.key == "distributedInfo") {
    kineto_ = true;
    od::object obj;
    if (doc.get_object().get(obj)) {
      return in_->Error(item.offset, "\"distributedInfo\" is not an object");
    }
    for (auto field : obj) {
      std::string_view key;
      od::value v;
      if (field.unescaped_key().get(key) || field.value().get(v)) {
        return in_->Error(item.offset, "malformed \"distributedInfo\"");
      }
      std::string k(key);
      std::string_view raw = Trim(v.raw_json_token());
      if (!raw.empty() && raw.front() == '"')
        raw = raw.substr(1, raw.size() - 2);
      attributes_[AttributeKey("distributedInfo.", k)] = std::string(raw);
      int64_t value;
      if (k == "rank" || k == "world_size") {
        if (!absl::SimpleAtoi(A(raw), &value) || value < 0 ||
            value > INT32_MAX) {
          return in_->Error(item.offset,
                            absl::StrCat("\"distributedInfo\": \"", k,
                                         "\" is not a non-negative integer"));
        }
        (k == "rank" ? rank_ : world_size_) = static_cast<int>(value);
      }
    }
    return absl::OkStatus();
  }
  std::string_view raw = Trim(item.value);
  if (raw.size() >= 2 && raw.front() == '"') {
    std::string_view s;
    if (!doc.get_string().get(s)) raw = s;
  }
  if (item.key == "schemaVersion" || item.key == "deviceProperties") {
    kineto_ = true;
  }
  attributes_[AttributeKey("json.", item.key)] =
      std::string(raw.substr(0, 4096));
  return absl::OkStatus();
}

absl::Status ChromeConverter::ParseId(od::value v, uint64_t offset,
                                      std::string_view what, int64_t* out) {
  od::json_type type;
  if (auto err = v.type().get(type)) return AsStatus(*in_, offset, err, what);
  std::string_view text;
  if (type == od::json_type::number) {
    int64_t i;
    if (!v.get_int64().get(i)) {
      *out = i;
      return absl::OkStatus();
    }
    double d;
    if (v.get_double().get(d) || !std::isfinite(d)) {
      return in_->Error(offset,
                        absl::StrCat("\"", A(what), "\" is not a number"));
    }
    if (std::fabs(d) < 9.2e18) {
      *out = static_cast<int64_t>(d);
      return absl::OkStatus();
    }
    // Beyond int64: an id by its spelling, like a string id.
    text = Trim(v.raw_json_token());
  } else if (type != od::json_type::string || v.get_string().get(text)) {
    return in_->Error(
        offset, absl::StrCat("\"", A(what), "\" is not a number or a string"));
  }
  int64_t i;
  if (absl::SimpleAtoi(A(text), &i)) {
    *out = i;
    return absl::OkStatus();
  }
  auto [it, inserted] = string_ids_.try_emplace(
      A(text), INT64_MIN / 2 + static_cast<int64_t>(string_ids_.size()));
  if (inserted) id_names_[it->second] = std::string(text);
  *out = it->second;
  return absl::OkStatus();
}

absl::Status ChromeConverter::HandleEvent(const JsonItem& item) {
  od::document doc;
  const uint64_t off = item.offset;
  if (auto err =
          parser_.iterate(item.value.data(), item.value.size(), item.capacity)
              .get(doc)) {
    return AsStatus(*in_, off, err, "event");
  }
  od::object obj;
  if (doc.get_object().get(obj)) {
    return in_->Error(off, "an element of \"traceEvents\" is not an object");
  }
  Event e;
  e.offset = off;
  for (auto field : obj) {
    std::string_view key;
    od::value v;
    if (auto err = field.unescaped_key().get(key)) {
      return AsStatus(*in_, off, err, "event");
    }
    if (auto err = field.value().get(v)) {
      return AsStatus(*in_, off, err, "event");
    }
    if (auto s = ReadEventField(item, key, v, &e); !s.ok()) return s;
  }
  if (e.ph == 0) {
    ++skipped_phases_["(none)"];
    return absl::OkStatus();
  }
  return Dispatch(e);
}

absl::Status ChromeConverter::ReadEventField(const JsonItem& item,
                                             std::string_view key, od::value v,
                                             Event* e) {
  const uint64_t off = item.offset;
  auto get_string = [&](std::string_view* out) -> absl::Status {
    if (v.get_string().get(*out)) {
      return in_->Error(
          off, absl::StrCat("event: \"", A(key), "\" is not a string"));
    }
    return absl::OkStatus();
  };
  auto get_time = [&](std::optional<int64_t>* out) -> absl::Status {
    std::string_view raw;
    od::json_type type;
    if (!v.type().get(type) &&
        (type == od::json_type::number || type == od::json_type::string) &&
        !(raw = v.raw_json_token()).empty()) {
      *out = MicrosToNs(raw);
      if (out->has_value()) return absl::OkStatus();
    }
    return in_->Error(off, absl::StrCat("event: \"", A(key),
                                        "\" is not a number of "
                                        "microseconds"));
  };
  if (key == "ph") {
    std::string_view ph;
    if (auto s = get_string(&ph); !s.ok()) return s;
    if (ph.size() != 1) {
      return in_->Error(off,
                        absl::StrCat("event: unknown phase \"", A(ph), "\""));
    }
    e->ph = ph[0];
  } else if (key == "name") {
    od::json_type type;
    if (!v.type().get(type) && type != od::json_type::string) {
      // A number as a name: keep its text.
      e->name = Trim(v.raw_json_token());
    } else {
      return get_string(&e->name);
    }
  } else if (key == "cat") {
    return get_string(&e->cat);
  } else if (key == "ts") {
    return get_time(&e->ts);
  } else if (key == "dur") {
    return get_time(&e->dur);
  } else if (key == "pid") {
    return ParseId(v, off, "pid", &e->pid);
  } else if (key == "tid") {
    return ParseId(v, off, "tid", &e->tid);
  } else if (key == "args") {
    return ReadEventArgs(item, v, e);
  } else if (key == "s") {
    return get_string(&e->scope);
  } else if (key == "bp") {
    return get_string(&e->bp);
  } else if (key == "id" || key == "id2" || key == "bind_id") {
    std::string_view raw;
    od::json_type type;
    if (!v.type().get(type) && type == od::json_type::object) {
      od::object o;
      if (v.get_object().get(o) || o.raw_json().get(raw)) {
        return in_->Error(off, "event: malformed \"id2\"");
      }
    } else {
      raw = v.raw_json_token();
    }
    e->id = Trim(raw);
  }
  return absl::OkStatus();
}

absl::Status ChromeConverter::ReadEventArgs(const JsonItem& item, od::value v,
                                            Event* e) {
  od::object args;
  if (v.get_object().get(args)) {
    return in_->Error(item.offset, "event: \"args\" is not an object");
  }
  if (e->ph == 'X' || e->ph == 'B' || e->ph == 'E' || e->ph == 'i' ||
      e->ph == 'I') {
    // The usual order ("ph" first): convert in this pass.
    args_.clear();
    e->args_converted = true;
    return ConvertArgObject(args, item.offset, &args_, &e->correlation);
  }
  if (args.raw_json().get(e->args)) {
    return in_->Error(item.offset, "event: \"args\" is not an object");
  }
  e->args_capacity = item.capacity - (e->args.data() - item.value.data());
  return absl::OkStatus();
}

absl::Status ChromeConverter::Dispatch(Event& e) {
  const char ph = e.ph;
  if (ph == 'M') return HandleMetadata(e);
  const bool timed = ph == 'X' || ph == 'B' || ph == 'E' || ph == 'i' ||
                     ph == 'I' || ph == 'C' || ph == 's' || ph == 't' ||
                     ph == 'f';
  if (!timed) {
    ++skipped_phases_[std::string(1, ph)];
    return absl::OkStatus();
  }
  if (!e.ts.has_value()) {
    return in_->Error(e.offset,
                      absl::StrCat("event \"", A(e.name), "\" (ph '",
                                   std::string(1, ph), "') has no \"ts\""));
  }
  const int64_t ts = *e.ts;
  min_ts_ = std::min(min_ts_, ts);
  max_ts_ = std::max(max_ts_, ts);
  if (ph == 'C') return HandleCounter(e);
  if (ph == 's' || ph == 't' || ph == 'f') return HandleFlow(e);

  const bool gpu = IsGpuCategory(e.cat);
  Thread* t = nullptr;
  uint32_t instant_track = 0;
  if ((ph == 'i' || ph == 'I') && (e.scope == "g" || e.scope == "p")) {
    instant_track = SharedInstantTrack(e);
  } else {
    t = &GetThread(e.pid, e.tid, gpu);
  }

  std::vector<Arg>& args = args_;
  int64_t correlation = e.correlation;
  if (!e.args_converted) {
    args.clear();
    if (!e.args.empty()) {
      if (auto s = ConvertArgs(e, &args, &correlation); !s.ok()) return s;
    }
  }
  if (!e.cat.empty()) {
    args.push_back({k_category_, StringId{w_->InternString(e.cat)}});
  }
  const uint32_t name = w_->InternString(e.name);
  if (ph == 'X') {
    AddComplete(e, *t, name, args, correlation, gpu);
  } else if (ph == 'B') {
    t->begins.push_back({ts, name, args, gpu});
  } else if (ph == 'E') {
    AddEnd(*t, ts, name, args);
  } else {
    // An instant.
    Count();
    const EventRef ref = w_->AddInstant(
        t != nullptr ? t->lanes[0].track : instant_track, ts, name, args);
    if (t != nullptr) AttachPending(*t, ref);
  }
  return absl::OkStatus();
}

uint32_t ChromeConverter::SharedInstantTrack(const Event& e) {
  if (e.scope == "g") {
    if (global_track_ == 0) {
      proto::Track desc;
      desc.set_kind(proto::TRACK_KIND_THREAD);
      desc.set_name("global instants");
      global_track_ = w_->AddTrack(desc);
    }
    return global_track_;
  }
  uint32_t& track = process_tracks_[e.pid];
  if (track == 0) {
    proto::Track desc;
    desc.set_kind(proto::TRACK_KIND_THREAD);
    auto it = id_names_.find(e.pid);
    desc.set_name(absl::StrCat(
        "process ", it != id_names_.end() ? it->second : absl::StrCat(e.pid),
        " instants"));
    track = w_->AddTrack(desc);
  }
  return track;
}

void ChromeConverter::NoteCollective(std::string_view name, int64_t end) {
  // NCCL's kernels: ncclKernel_AllReduce_RING_LL_Sum_float(...) before
  // NCCL 2.19, ncclDevKernel_AllReduce_Sum_f32_RING_LL(...) after.
  for (std::string_view prefix : {"ncclKernel_", "ncclDevKernel_"}) {
    if (!name.starts_with(prefix)) continue;
    std::string_view rest = name.substr(prefix.size());
    const size_t cut = rest.find_first_of("_(");
    rest = rest.substr(0, cut);
    if (rest.empty() || rest.size() > 64) return;
    // Bounded: a hostile file cannot grow this past the events it holds,
    // and the alignment needs no more than a few thousand.
    if (nccl_ends_.size() < (size_t{1} << 20)) {
      nccl_ends_.emplace_back(std::string(rest), end);
    }
    return;
  }
}

std::vector<std::pair<std::string, int64_t>> ChromeConverter::CollectiveEnds()
    const {
  std::vector<std::pair<std::string, int64_t>> sorted = nccl_ends_;
  std::stable_sort(
      sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second < b.second;
      });
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(sorted.size());
  size_t n = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0 && sorted[i].first != sorted[i - 1].first) n = 0;
    out.emplace_back(absl::StrCat("nccl/", sorted[i].first, "/", n++),
                     sorted[i].second);
  }
  return out;
}

void ChromeConverter::AddComplete(const Event& e, Thread& t, uint32_t name,
                                  std::span<const Arg> args,
                                  int64_t correlation, bool gpu) {
  const int64_t ts = *e.ts;
  int64_t dur = e.dur.value_or(0);
  if (dur < 0) dur = 0;
  int64_t end;
  if (__builtin_add_overflow(ts, dur, &end)) end = INT64_MAX;
  max_ts_ = std::max(max_ts_, end);
  if (gpu) NoteCollective(e.name, end);
  const EventRef ref = AddSlice(t, ts, end, name, args);
  if (correlation > 0) {
    const auto id = static_cast<uint64_t>(correlation);
    if (gpu && corr_end_.insert(id).second) {
      w_->AddFlow(ref, FlowId(id), FlowPhase::kEnd);
    } else if (IsLaunchCategory(e.cat) && corr_begin_.insert(id).second) {
      w_->AddFlow(ref, FlowId(id), FlowPhase::kBegin);
    }
  }
}

void ChromeConverter::AddEnd(Thread& t, int64_t ts, uint32_t name,
                             std::vector<Arg>& args) {
  if (t.begins.empty()) {
    // Kept as an instant, so that nothing in the file is lost.
    ++unmatched_ends_;
    args.push_back({k_unclosed_, int64_t{1}});
    Count();
    const EventRef ref = w_->AddInstant(t.lanes[0].track, ts, name, args);
    AttachPending(t, ref);
    return;
  }
  Begin b = std::move(t.begins.back());
  t.begins.pop_back();
  b.args.insert(b.args.end(), args.begin(), args.end());
  AddSlice(t, b.ts, std::max(ts, b.ts), b.name, b.args);
}

absl::Status ChromeConverter::ConvertArgs(const Event& e, std::vector<Arg>* out,
                                          int64_t* correlation) {
  od::document doc;
  od::object obj;
  if (args_parser_.iterate(e.args.data(), e.args.size(), e.args_capacity)
          .get(doc) ||
      doc.get_object().get(obj)) {
    return in_->Error(e.offset, "event: malformed \"args\"");
  }
  return ConvertArgObject(obj, e.offset, out, correlation);
}

absl::Status ChromeConverter::ConvertArgObject(od::object obj, uint64_t offset,
                                               std::vector<Arg>* out,
                                               int64_t* correlation) {
  for (auto field : obj) {
    std::string_view key;
    od::value v;
    od::json_type type;
    if (field.unescaped_key().get(key) || field.value().get(v) ||
        v.type().get(type)) {
      return in_->Error(offset, "event: malformed \"args\"");
    }
    Arg arg;
    arg.key = w_->InternString(key);
    switch (type) {
      case od::json_type::number: {
        od::number_type nt;
        if (v.get_number_type().get(nt)) {
          return in_->Error(offset, "event: malformed number in \"args\"");
        }
        int64_t i;
        double d;
        if (nt == od::number_type::signed_integer && !v.get_int64().get(i)) {
          arg.value = i;
          if (key == "correlation") *correlation = i;
        } else if (!v.get_double().get(d)) {
          arg.value = d;
        } else {
          return in_->Error(offset, "event: malformed number in \"args\"");
        }
        break;
      }
      case od::json_type::string: {
        std::string_view s;
        if (v.get_string().get(s)) {
          return in_->Error(offset, "event: malformed string in \"args\"");
        }
        arg.value = StringId{w_->InternString(s)};
        break;
      }
      case od::json_type::boolean: {
        bool b;
        if (v.get_bool().get(b)) {
          return in_->Error(offset, "event: malformed boolean in \"args\"");
        }
        arg.value = int64_t{b ? 1 : 0};
        break;
      }
      case od::json_type::null:
        arg.value = StringId{w_->InternString("null")};
        break;
      case od::json_type::array:
      case od::json_type::object: {
        // Nested values keep their JSON text.
        std::string_view raw;
        simdjson::error_code err;
        if (type == od::json_type::array) {
          od::array a;
          err = v.get_array().get(a);
          if (!err) err = a.raw_json().get(raw);
        } else {
          od::object o;
          err = v.get_object().get(o);
          if (!err) err = o.raw_json().get(raw);
        }
        if (err) return AsStatus(*in_, offset, err, "event \"args\"");
        arg.value = StringId{w_->InternString(Trim(raw))};
        break;
      }
    }
    out->push_back(arg);
  }
  return absl::OkStatus();
}

absl::Status ChromeConverter::ForEachArg(
    const Event& e, std::string_view what,
    absl::FunctionRef<absl::Status(std::string_view, od::value)> fn) {
  if (e.args.empty()) return absl::OkStatus();
  const std::string malformed = absl::StrCat(A(what), ": malformed \"args\"");
  od::document doc;
  od::object obj;
  if (args_parser_.iterate(e.args.data(), e.args.size(), e.args_capacity)
          .get(doc) ||
      doc.get_object().get(obj)) {
    return in_->Error(e.offset, malformed);
  }
  for (auto field : obj) {
    std::string_view key;
    od::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) {
      return in_->Error(e.offset, malformed);
    }
    if (absl::Status s = fn(key, v); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ChromeConverter::HandleMetadata(const Event& e) {
  if (e.args.empty()) return absl::OkStatus();
  std::string text;
  std::optional<int64_t> number;
  absl::Status status =
      ForEachArg(e, "metadata event", [&](std::string_view key, od::value v) {
        std::string_view s;
        int64_t i;
        if (key == "name" || key == "labels") {
          if (v.get_string().get(s)) {
            return in_->Error(
                e.offset, absl::StrCat("metadata event \"", A(e.name), "\": \"",
                                       A(key), "\" is not a string"));
          }
          text = std::string(s);
        } else if (key == "sort_index" && !v.get_int64().get(i)) {
          number = i;
        }
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (e.name == "process_name") {
    process_names_[e.pid] = text;
    if (main_process_name_.empty() &&
        (main_pid_ == kUnset || main_pid_ == e.pid)) {
      main_process_name_ = text;
    }
    Rename(e.pid, std::nullopt);
  } else if (e.name == "process_labels") {
    labels_[e.pid] = text;
    Rename(e.pid, std::nullopt);
  } else if (e.name == "thread_name") {
    thread_names_[{e.pid, e.tid}] = text;
    Rename(e.pid, e.tid);
  } else if (e.name == "thread_sort_index" && number.has_value()) {
    thread_sort_[{e.pid, e.tid}] = static_cast<int>(*number);
    Rename(e.pid, e.tid);
  }
  return absl::OkStatus();
}

absl::Status ChromeConverter::HandleCounter(const Event& e) {
  return ForEachArg(e, "counter event", [&](std::string_view key, od::value v) {
    double value;
    if (v.get_double().get(value)) {
      std::string_view s;
      if (v.get_string().get(s) || !absl::SimpleAtod(A(s), &value)) {
        return in_->Error(
            e.offset, absl::StrCat("counter \"", A(e.name), "\": \"", A(key),
                                   "\" is not a number"));
      }
    }
    std::string series = key == "value" || key == e.name
                             ? std::string(e.name)
                             : absl::StrCat(A(e.name), " ", A(key));
    uint32_t& track = counter_tracks_[absl::StrCat(e.pid, "\x1f", series)];
    if (track == 0) {
      proto::Track desc;
      desc.set_kind(proto::TRACK_KIND_COUNTER);
      desc.set_name(series);
      track = w_->AddTrack(desc);
    }
    Count();
    w_->AddCounter(track, *e.ts, value);
    return absl::OkStatus();
  });
}

absl::Status ChromeConverter::HandleFlow(const Event& e) {
  if (e.id.empty()) {
    Warn(absl::StrCat("byte ", e.offset,
                      ": a flow event without an id was "
                      "skipped"));
    return absl::OkStatus();
  }
  const FlowPhase phase = e.ph == 's'   ? FlowPhase::kBegin
                          : e.ph == 't' ? FlowPhase::kStep
                                        : FlowPhase::kEnd;
  uint64_t id;
  int64_t numeric;
  if (e.cat == "ac2g" && absl::SimpleAtoi(A(e.id), &numeric) && numeric > 0) {
    // Kineto's launch -> kernel flows repeat the "correlation" args, which
    // may already have linked the two.
    id = static_cast<uint64_t>(numeric);
    auto& seen = phase == FlowPhase::kBegin ? corr_begin_ : corr_end_;
    if (!seen.insert(id).second) return absl::OkStatus();
    id = FlowId(id);
  } else {
    auto [it, inserted] =
        flow_ids_.try_emplace(absl::StrCat(A(e.cat), "\x1f", A(e.id)),
                              FlowId((uint64_t{1} << 39) + flow_ids_.size()));
    id = it->second;
  }
  Thread& t = GetThread(e.pid, e.tid, false);
  const int64_t ts = *e.ts;
  const bool enclosing = e.ph != 'f' || e.bp == "e";
  if (enclosing) {
    // The innermost open slice that holds ts, if its ref is still live.
    const OpenSlice* best = nullptr;
    for (const Lane& lane : t.lanes) {
      for (auto it = lane.open.rbegin(); it != lane.open.rend(); ++it) {
        if (it->start <= ts && ts <= it->end) {
          if (best == nullptr || it->start >= best->start) best = &*it;
          break;
        }
      }
    }
    if (best != nullptr && best->epoch == epoch_) {
      w_->AddFlow(best->ref, id, phase);
      return absl::OkStatus();
    }
  }
  t.flows.push_back({id, phase});
  return absl::OkStatus();
}

ChromeConverter::Thread& ChromeConverter::GetThread(int64_t pid, int64_t tid,
                                                    bool gpu_hint) {
  auto& slot = threads_[{pid, tid}];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<Thread>();
  Thread& t = *slot;
  t.pid = pid;
  t.tid = tid;
  auto label = labels_.find(pid);
  t.device = gpu_hint ||
             (label != labels_.end() && absl::StartsWith(label->second, "GPU"));
  if (!t.device && main_pid_ == kUnset && pid > INT64_MIN / 4) {
    main_pid_ = pid;
    auto name = process_names_.find(pid);
    if (name != process_names_.end()) main_process_name_ = name->second;
  }
  t.lanes.emplace_back();
  Lane& lane = t.lanes.back();
  lane.desc.set_kind(t.device ? proto::TRACK_KIND_DEVICE_STREAM
                              : proto::TRACK_KIND_THREAD);
  if (t.device) {
    lane.desc.set_device_id(static_cast<int32_t>(pid));
    lane.desc.set_stream_id(static_cast<int32_t>(tid));
  } else if (tid > INT64_MIN / 4) {
    lane.desc.set_tid(tid);
  }
  auto sort = thread_sort_.find({pid, tid});
  if (sort != thread_sort_.end()) lane.desc.set_sort_index(sort->second);
  lane.desc.set_name(TrackName(t, 0));
  lane.track = w_->AddTrack(lane.desc);
  if (t.device) devices_[pid].push_back(lane.track);
  return t;
}

std::string ChromeConverter::TrackName(const Thread& t, size_t lane) const {
  auto id_text = [&](int64_t id) {
    auto it = id_names_.find(id);
    return it != id_names_.end() ? it->second : absl::StrCat(id);
  };
  std::string thread;
  auto name = thread_names_.find({t.pid, t.tid});
  if (name != thread_names_.end() && !Trim(name->second).empty()) {
    thread = std::string(Trim(name->second));
  } else {
    thread = id_names_.count(t.tid)
                 ? id_text(t.tid)  // a tid given as a name
                 : absl::StrCat(t.device ? "stream " : "thread ", t.tid);
  }
  std::string out;
  if (t.device) {
    auto label = labels_.find(t.pid);
    out = absl::StrCat(
        label != labels_.end() ? label->second : absl::StrCat("GPU ", t.pid),
        " ", thread);
  } else if (t.pid != main_pid_) {
    auto process = process_names_.find(t.pid);
    out = absl::StrCat(process != process_names_.end() && t.pid > INT64_MIN / 4
                           ? absl::StrCat(process->second, " (pid ", t.pid, ")")
                           : id_text(t.pid),
                       " / ", thread);
  } else {
    out = thread;
  }
  if (lane > 0) absl::StrAppend(&out, " (overlap ", lane + 1, ")");
  return out;
}

void ChromeConverter::Rename(int64_t pid, std::optional<int64_t> tid) {
  for (auto& [key, t] : threads_) {
    if (key.first != pid || (tid.has_value() && key.second != *tid)) continue;
    auto sort = thread_sort_.find(key);
    for (size_t i = 0; i < t->lanes.size(); ++i) {
      Lane& lane = t->lanes[i];
      lane.desc.set_name(TrackName(*t, i));
      if (sort != thread_sort_.end()) lane.desc.set_sort_index(sort->second);
      w_->UpdateTrack(lane.track, lane.desc);
    }
  }
}

EventRef ChromeConverter::AddSlice(Thread& t, int64_t start, int64_t end,
                                   uint32_t name, std::span<const Arg> args) {
  Count();
  std::vector<OpenSlice> moved;
  for (size_t i = 0;; ++i) {
    if (i == t.lanes.size()) {
      ++overlap_slices_;
      t.lanes.emplace_back();
      Lane& lane = t.lanes.back();
      lane.desc = t.lanes[0].desc;
      lane.desc.set_name(TrackName(t, i));
      lane.track = w_->AddTrack(lane.desc);
      if (t.device) devices_[t.pid].push_back(lane.track);
    }
    Lane& lane = t.lanes[i];
    auto& open = lane.open;
    while (!open.empty() && open.back().end <= start &&
           !(open.back().start == start && open.back().end == start)) {
      open.pop_back();
    }
    // A parent written after a child that starts with it.
    moved.clear();
    while (!open.empty() && open.back().start == start &&
           open.back().end < end) {
      moved.push_back(open.back());
      open.pop_back();
    }
    if (open.empty() || end <= open.back().end) {
      const EventRef ref =
          w_->AddSlice(lane.track, start, end - start, name, args);
      open.push_back({start, end, epoch_, ref});
      open.insert(open.end(), moved.rbegin(), moved.rend());
      AttachPending(t, ref);
      return ref;
    }
    open.insert(open.end(), moved.rbegin(), moved.rend());
  }
}

void ChromeConverter::AttachPending(Thread& t, const EventRef& ref) {
  for (const PendingFlow& f : t.flows) w_->AddFlow(ref, f.id, f.phase);
  t.flows.clear();
}

absl::Status ChromeConverter::Finish() {
  uint64_t unclosed = 0, unbound = 0;
  for (auto& [key, t] : threads_) {
    // B events never ended: closed at the end of the trace.
    while (!t->begins.empty()) {
      Begin b = std::move(t->begins.back());
      t->begins.pop_back();
      b.args.push_back({k_unclosed_, int64_t{1}});
      AddSlice(*t, b.ts, std::max(max_ts_, b.ts), b.name, b.args);
      ++unclosed;
    }
    unbound += t->flows.size();
  }
  if (unclosed > 0) {
    Warn(absl::StrCat(unclosed,
                      " B event(s) without a matching E were closed "
                      "at the end of the trace (arg unclosed=1)"));
  }
  if (unmatched_ends_ > 0) {
    Warn(absl::StrCat(unmatched_ends_,
                      " E event(s) without a matching B were "
                      "kept as instants (arg unclosed=1)"));
  }
  if (overlap_slices_ > 0) {
    Warn(
        absl::StrCat("slices that overlap without nesting on one thread "
                     "were put on extra \"(overlap N)\" tracks"));
  }
  if (unbound > 0) {
    Warn(absl::StrCat(unbound, " flow event(s) found no slice to bind to"));
  }
  for (const auto& [ph, n] : skipped_phases_) {
    Warn(absl::StrCat(n, " event(s) of phase '", ph, "' are not converted"));
  }
  return absl::OkStatus();
}

}  // namespace podscope::trace_format::json_internal
