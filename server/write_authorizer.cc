#include "server/write_authorizer.h"

#include <utility>

#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

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
  const PresentedToken presented = PresentedBearerToken(context);
  if (presented.problem.empty()) {
    if (TokensEqual(presented.token, token_)) return grpc::Status::OK;
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
  if (const uint64_t n = refusals_->unauthenticated.Count()) {
    spdlog::warn(
        "write refused: UNAUTHENTICATED method={} peer={} reason={} "
        "(refusals with this code so far: {})",
        method, LogText(context.peer()), presented.problem, n);
  }
  return grpc::Status(
      grpc::StatusCode::UNAUTHENTICATED,
      std::string(presented.problem) +
          ": this server requires `authorization: Bearer <token>` on "
          "mutations (the client sets KV_INDEXER_WRITE_TOKEN_FILE)");
}

}  // namespace kvindexer
