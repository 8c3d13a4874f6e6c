// The per-user token that guards profiler servers on loopback: on a shared
// login or SLURM node every local user can reach 127.0.0.1, so a server
// without a configured token still requires one, kept in a file only its
// user can read; clients of the same user on the same machine read it from
// there. docs/profiler-service.md ("Who may call") has the rules.
//
// Contract:
// - The file is $XDG_RUNTIME_DIR/podscope/token when XDG_RUNTIME_DIR names
//   a folder, else ~/.podscope/token ($HOME, else the password database).
// - UserToken(true) creates the folder (0700) and the file (0600, 64 hex
//   digits) at first use; concurrent first uses from any number of threads
//   and processes all return the one token that was linked into place.
// - A token file (or folder) that is a symlink, not owned by this user, or
//   open to group or others (the folder: writable by them) is refused with
//   FAILED_PRECONDITION naming the path and what to change; so is a file
//   that is empty, over 4 KiB or holds characters other than visible ASCII.
// - UserToken(false) never creates anything: NOT_FOUND when there is no
//   file yet.
#ifndef PODSCOPE_PROFILER_USER_TOKEN_H_
#define PODSCOPE_PROFILER_USER_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"

namespace podscope::profiler {

// This user's token (see above).
absl::StatusOr<std::string> UserToken(bool create);

// Where UserToken keeps it.
absl::StatusOr<std::string> UserTokenPath();

// The token a client sends to the server at `address` ("host:port"):
// `given`, else $PODSCOPE_PROFILER_TOKEN when it is set (set but empty:
// none), else, for a loopback address, the user token when its file exists.
// Fails only when the user token file exists and is refused.
absl::StatusOr<std::string> ClientToken(const std::string& given,
                                        const std::string& address);

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_USER_TOKEN_H_
