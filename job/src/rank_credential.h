// The metadata by which a registered rank's calls prove who they are
// (RegisterResponse.rank_secret).
#ifndef PODSCOPE_JOB_SRC_RANK_CREDENTIAL_H_
#define PODSCOPE_JOB_SRC_RANK_CREDENTIAL_H_

namespace podscope::job::internal {

inline constexpr char kRankMetadata[] = "podscope-rank";
inline constexpr char kSecretMetadata[] = "podscope-rank-secret";

}  // namespace podscope::job::internal

#endif  // PODSCOPE_JOB_SRC_RANK_CREDENTIAL_H_
