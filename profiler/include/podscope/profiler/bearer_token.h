// The token rule every Podscope gRPC service shares (the profiler server,
// XProf's ProfilerService on the same port, a job's coordinator): with a
// token configured, each call must carry `authorization: Bearer <token>`;
// the comparison takes the same time wherever the tokens differ. Without a
// token every call passes.
#ifndef PODSCOPE_PROFILER_BEARER_TOKEN_H_
#define PODSCOPE_PROFILER_BEARER_TOKEN_H_

#include <grpcpp/grpcpp.h>

#include <string_view>

namespace podscope::profiler {

// True when `given` equals `expected` (never for an empty `expected`), in
// time that depends on `given`'s length only, not on where they differ.
bool SameSecret(std::string_view given, std::string_view expected);

// OK, or UNAUTHENTICATED with `missing` (no authorization metadata) or
// `wrong` (a different token) as the message.
grpc::Status CheckBearerToken(const grpc::ServerContextBase& ctx,
                              std::string_view token, std::string_view missing,
                              std::string_view wrong);

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_BEARER_TOKEN_H_
