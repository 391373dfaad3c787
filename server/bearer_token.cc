#include "server/bearer_token.h"

#include "absl/strings/match.h"
#include "common/absl_view.h"

namespace kvindexer {
namespace {

constexpr std::string_view kBearerScheme = "Bearer ";

}  // namespace

PresentedToken PresentedBearerToken(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(grpc::string_ref(kAuthorizationHeader.data(),
                                                 kAuthorizationHeader.size()));
  if (it == metadata.end())
    return {.token = {}, .problem = "no authorization metadata"};
  const std::string_view value(it->second.data(), it->second.size());
  // The scheme is case-insensitive (RFC 9110, "Authentication Scheme").
  if (value.size() <= kBearerScheme.size() ||
      !absl::EqualsIgnoreCase(
          absl::string_view(value.data(), kBearerScheme.size()),
          AbslView(kBearerScheme))) {
    return {.token = {},
            .problem = "the authorization metadata is not a bearer token"};
  }
  return {.token = value.substr(kBearerScheme.size()), .problem = {}};
}

bool TokensEqual(std::string_view presented, std::string_view expected) {
  // Every byte of `expected` is compared whatever the outcome; a length
  // mismatch is folded into the same accumulator instead of returning early.
  volatile unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char p =
        i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff = diff | (p ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

}  // namespace kvindexer
