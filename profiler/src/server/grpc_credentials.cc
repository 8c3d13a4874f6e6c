#include "podscope/profiler/grpc_credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"

namespace podscope::profiler {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path,
                                    const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read the TLS ", what, " file '", path, "'"));
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
ServerCredentialsFromFiles(const std::string& cert_file,
                           const std::string& key_file) {
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate and a key file");
  }
  if (cert_file.empty()) return grpc::InsecureServerCredentials();
  PODSCOPE_ASSIGN_OR_RETURN(auto cert, ReadPem(cert_file, "certificate"));
  PODSCOPE_ASSIGN_OR_RETURN(auto key, ReadPem(key_file, "key"));
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
ChannelCredentialsFromFiles(const std::string& ca_file,
                            const std::string& server_name,
                            grpc::ChannelArguments* args) {
  if (ca_file.empty()) return grpc::InsecureChannelCredentials();
  PODSCOPE_ASSIGN_OR_RETURN(auto ca, ReadPem(ca_file, "CA"));
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ca;
  if (!server_name.empty()) args->SetSslTargetNameOverride(server_name);
  return grpc::SslCredentials(ssl);
}

}  // namespace podscope::profiler
