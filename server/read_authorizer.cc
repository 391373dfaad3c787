#include "server/read_authorizer.h"

#include <utility>

#include "common/log_text.h"
#include "server/bearer_token.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

ReadAuthorizer::ReadAuthorizer() : refusals_(std::make_shared<Refusals>()) {}

ReadAuthorizer::ReadAuthorizer(std::string read_token, std::string write_token)
    : read_token_(std::move(read_token)),
      write_token_(std::move(write_token)),
      refusals_(std::make_shared<Refusals>()) {}

uint64_t ReadAuthorizer::unauthenticated_total() const {
  return refusals_->unauthenticated.total();
}

uint64_t ReadAuthorizer::permission_denied_total() const {
  return refusals_->permission_denied.total();
}

grpc::Status ReadAuthorizer::Check(const grpc::ServerContextBase& context,
                                   std::string_view method) const {
  if (!enabled()) return grpc::Status::OK;
  const PresentedToken presented = PresentedBearerToken(context);
  if (presented.problem.empty()) {
    // Both comparisons run, so that timing does not tell which token a
    // guess was closer to.
    const bool read = TokensEqual(presented.token, read_token_);
    const bool write =
        !write_token_.empty() && TokensEqual(presented.token, write_token_);
    if (read || write) return grpc::Status::OK;
    if (const uint64_t n = refusals_->permission_denied.Count()) {
      spdlog::warn(
          "admin call refused: PERMISSION_DENIED method={} peer={} "
          "reason=the bearer token matches neither the read token nor the "
          "write token (refusals with this code so far: {})",
          method, LogText(context.peer()), n);
    }
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        "the token matches neither the server's admin read token nor its "
        "write token");
  }
  if (const uint64_t n = refusals_->unauthenticated.Count()) {
    spdlog::warn(
        "admin call refused: UNAUTHENTICATED method={} peer={} reason={} "
        "(refusals with this code so far: {})",
        method, LogText(context.peer()), presented.problem, n);
  }
  return grpc::Status(
      grpc::StatusCode::UNAUTHENTICATED,
      std::string(presented.problem) +
          ": this server requires `authorization: Bearer <token>` on admin "
          "calls (the client sets KV_INDEXER_ADMIN_READ_TOKEN_FILE or "
          "KV_INDEXER_WRITE_TOKEN_FILE)");
}

}  // namespace kvindexer
