#include "podscope/profiler/bearer_token.h"

#include <string>

namespace podscope::profiler {

grpc::Status CheckBearerToken(const grpc::ServerContext& ctx,
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
  const std::string expected = std::string("Bearer ").append(token);
  // Compare without stopping at the first difference.
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned>(given[i]) ^
            static_cast<unsigned>(expected[i % expected.size()]);
  }
  if (diff != 0) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(wrong));
  }
  return grpc::Status::OK;
}

}  // namespace podscope::profiler
