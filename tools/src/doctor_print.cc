#include "doctor_print.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/base/human_format.h"
#include "podscope/base/json.h"

namespace podscope::tools {

std::string DoctorText(const viewer::TraceStore& store,
                       const viewer::DoctorView& doctor) {
  std::string out;
  const viewer::JournalVerdict& v = doctor.verdict;
  absl::StrAppendFormat(&out, "Job doctor: %s (%d journal%s)\n",
                        v.kind.empty() ? "no verdict" : v.kind, doctor.journals,
                        doctor.journals == 1 ? "" : "s");
  if (!v.sentence.empty()) absl::StrAppend(&out, "  ", v.sentence, "\n");
  for (const viewer::DoctorMark& m : doctor.marks) {
    absl::StrAppendFormat(&out, "  rank %d at %s: %s\n", m.rank,
                          base::FormatDuration(m.start_ns - store.first_ns()),
                          m.label);
  }
  for (const std::string& p : doctor.problems) {
    absl::StrAppend(&out, "  cannot use ", p, "\n");
  }
  out.push_back('\n');
  return out;
}

std::string WithDoctorJson(std::string json, const viewer::DoctorView& doctor) {
  const size_t close = json.rfind('}');
  if (close == std::string::npos) return json;
  std::string member;
  base::JsonWriter j(&member, base::JsonLayout::kOneLine);
  j.BeginObject();
  j.Field("verdict", doctor.verdict.kind);
  j.Field("sentence", doctor.verdict.sentence);
  j.Field("rank", doctor.verdict.rank);
  j.Field("group", doctor.verdict.group);
  j.Field("sequence", doctor.verdict.sequence);
  j.Field("journals", static_cast<int64_t>(doctor.journals));
  j.Key("marks").BeginArray();
  for (const viewer::DoctorMark& m : doctor.marks) {
    j.BeginObject();
    j.Field("kind", m.kind == viewer::DoctorMarkKind::kCollective ? "collective"
                                                                  : "where");
    j.Field("rank", m.rank);
    j.Field("start_ns", m.start_ns).Field("end_ns", m.end_ns);
    j.Field("label", m.label);
    j.EndObject();
  }
  j.EndArray();
  j.Key("problems").BeginArray();
  for (const std::string& p : doctor.problems) j.String(p);
  j.EndArray();
  j.EndObject();
  json.insert(close, ",\n  \"doctor\": " + member + "\n");
  return json;
}

}  // namespace podscope::tools
