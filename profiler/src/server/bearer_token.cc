#include "podscope/profiler/bearer_token.h"

#include <string>

namespace podscope::profiler {

bool SameSecret(std::string_view given, std::string_view expected) {
  if (expected.empty()) return false;
  // Compare without stopping at the first difference.
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned>(given[i]) ^
            static_cast<unsigned>(expected[i % expected.size()]);
  }
  return diff == 0;
}

grpc::Status CheckBearerToken(const grpc::ServerContextBase& ctx,
                              std::string_view token, std::string_view missing,
                              std::string_view wrong) {
  if (token.empty()) return grpc::Status::OK;
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string(missing));
  }
  const std::string_view given(it->second.data(), it->second.size());
  if (!SameSecret(given, std::string("Bearer ").append(token))) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(wrong));
  }
  return grpc::Status::OK;
}

}  // namespace podscope::profiler
