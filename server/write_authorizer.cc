// Placeholder: allows every call. Replaced by the security work.
#include "server/write_authorizer.h"

#include <utility>

namespace kvindexer {

WriteAuthorizer::WriteAuthorizer(std::string token)
    : token_(std::move(token)) {}

grpc::Status WriteAuthorizer::Check(const grpc::ServerContextBase& /*context*/,
                                    std::string_view /*method*/) const {
  return grpc::Status::OK;
}

}  // namespace kvindexer
