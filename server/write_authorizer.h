// WriteAuthorizer: the write token check (docs/operations.md, "Security").
//
// With KV_INDEXER_WRITE_TOKEN_FILE set, every call that changes the index
// (ApplyExternalKvBatch, ReplaceExternalKvSnapshot, ConfigureExpectedWorkers
// and every admin mutation) must carry the metadata
// `authorization: Bearer <token>`. The router-facing reads stay open, so that
// sgl-router works unchanged. A call without the metadata, or with one that
// is not a bearer token, is UNAUTHENTICATED; a wrong token is
// PERMISSION_DENIED. Refusals are logged (throttled) with the method and the
// peer, never with the token.
//
// Thread safety: Check may run concurrently.
#ifndef KVINDEXER_SERVER_WRITE_AUTHORIZER_H_
#define KVINDEXER_SERVER_WRITE_AUTHORIZER_H_

#include <string>
#include <string_view>

#include "grpcpp/grpcpp.h"

namespace kvindexer {

class WriteAuthorizer {
 public:
  // No token: every call is allowed.
  WriteAuthorizer() = default;
  // REQUIRES: !token.empty().
  explicit WriteAuthorizer(std::string token);

  bool enabled() const { return !token_.empty(); }

  // OK, UNAUTHENTICATED or PERMISSION_DENIED for one mutating call of
  // `method` (a full method name, for the log line).
  grpc::Status Check(const grpc::ServerContextBase& context,
                     std::string_view method) const;

 private:
  std::string token_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_WRITE_AUTHORIZER_H_
