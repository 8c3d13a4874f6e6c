#ifndef PODSCOPE_JOB_SRC_DOCTOR_WIRE_H_
#define PODSCOPE_JOB_SRC_DOCTOR_WIRE_H_

// The job doctor's states on the wire: doctor.h's structs to and from the
// coordination protocol's messages, with the bounds checked on receipt.

#include "absl/status/statusor.h"
#include "podscope/job/coordination_service.pb.h"
#include "podscope/job/doctor.h"

namespace podscope::job::internal {

void ToProto(const RankState& state, coordination::RankState* out);

// INVALID_ARGUMENT naming the field when `in` exceeds DoctorLimits.
absl::StatusOr<RankState> FromProto(const coordination::RankState& in);

}  // namespace podscope::job::internal

#endif  // PODSCOPE_JOB_SRC_DOCTOR_WIRE_H_
