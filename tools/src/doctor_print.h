// How `podscope analyze` shows a job doctor's dump folder
// (viewer/doctor_dump.h): the verdict first, then where each rank was.
#ifndef PODSCOPE_TOOLS_DOCTOR_PRINT_H_
#define PODSCOPE_TOOLS_DOCTOR_PRINT_H_

#include <string>

#include "podscope/viewer/doctor_dump.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::tools {

// "Job doctor: stalled (3 journals)", the sentence, then a line per mark
// with its time since the trace's start; "" without journals.
std::string DoctorText(const viewer::TraceStore& store,
                       const viewer::DoctorView& doctor);
// `json` with a "doctor" member added (the verdict and the marks, times in
// ns on the store's clock).
std::string WithDoctorJson(std::string json, const viewer::DoctorView& doctor);

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_DOCTOR_PRINT_H_
