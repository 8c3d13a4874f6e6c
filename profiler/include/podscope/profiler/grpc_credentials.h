// TLS for every Podscope gRPC service and its clients (the profiler
// server, the capture client, a job's coordinator), from PEM files.
//
// Contract:
// - ServerCredentialsFromFiles(cert, key): TLS with that certificate and
//   key; both empty: plaintext; one without the other, or a file that
//   cannot be read, is InvalidArgument naming it.
// - ChannelCredentialsFromFiles(ca, server_name, args): TLS trusting the
//   CA's certificates, checking the server's name against `server_name`
//   when given (else the host dialled); empty `ca`: plaintext.
#ifndef PODSCOPE_PROFILER_GRPC_CREDENTIALS_H_
#define PODSCOPE_PROFILER_GRPC_CREDENTIALS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace podscope::profiler {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
ServerCredentialsFromFiles(const std::string& cert_file,
                           const std::string& key_file);

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
ChannelCredentialsFromFiles(const std::string& ca_file,
                            const std::string& server_name,
                            grpc::ChannelArguments* args);

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_GRPC_CREDENTIALS_H_
