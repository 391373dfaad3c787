#include "server/write_authorizer.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "common/absl_view.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

constexpr std::string_view kBearerScheme = "Bearer ";

}  // namespace

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

WriteAuthorizer::WriteAuthorizer() : refusals_(std::make_shared<Refusals>()) {}

WriteAuthorizer::WriteAuthorizer(std::string token)
    : token_(std::move(token)), refusals_(std::make_shared<Refusals>()) {}

uint64_t WriteAuthorizer::unauthenticated_total() const {
  return refusals_->unauthenticated.total();
}

uint64_t WriteAuthorizer::permission_denied_total() const {
  return refusals_->permission_denied.total();
}

grpc::Status WriteAuthorizer::Check(const grpc::ServerContextBase& context,
                                    std::string_view method) const {
  if (!enabled()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(grpc::string_ref(kAuthorizationHeader.data(),
                                                 kAuthorizationHeader.size()));
  std::string_view reason;
  if (it == metadata.end()) {
    reason = "no authorization metadata";
  } else {
    const std::string_view value(it->second.data(), it->second.size());
    // The scheme is case-insensitive (RFC 9110, "Authentication Scheme").
    if (value.size() <= kBearerScheme.size() ||
        !absl::EqualsIgnoreCase(
            absl::string_view(value.data(), kBearerScheme.size()),
            AbslView(kBearerScheme))) {
      reason = "the authorization metadata is not a bearer token";
    } else {
      const std::string_view presented = value.substr(kBearerScheme.size());
      if (TokensEqual(presented, token_)) return grpc::Status::OK;
      if (const uint64_t n = refusals_->permission_denied.Count()) {
        spdlog::warn(
            "write refused: PERMISSION_DENIED method={} peer={} reason=the "
            "bearer token does not match (refusals with this code so far: "
            "{})",
            method, LogText(context.peer()), n);
      }
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "the write token does not match the server's");
    }
  }
  if (const uint64_t n = refusals_->unauthenticated.Count()) {
    spdlog::warn(
        "write refused: UNAUTHENTICATED method={} peer={} reason={} "
        "(refusals with this code so far: {})",
        method, LogText(context.peer()), reason, n);
  }
  return grpc::Status(
      grpc::StatusCode::UNAUTHENTICATED,
      std::string(reason) +
          ": this server requires `authorization: Bearer <token>` on "
          "mutations (the client sets KV_INDEXER_WRITE_TOKEN_FILE)");
}

}  // namespace kvindexer
