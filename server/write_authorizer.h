// WriteAuthorizer: the write token check (docs/security.md, "The write
// token").
//
// With KV_INDEXER_WRITE_TOKEN_FILE set, every call that changes the index
// (ApplyExternalKvBatch, ReplaceExternalKvSnapshot, ConfigureExpectedWorkers
// and every admin mutation) must carry the metadata
// `authorization: Bearer <token>`. The router-facing reads stay open, so that
// sgl-router works unchanged. A call without the metadata, or with one that
// is not a bearer token, is UNAUTHENTICATED; a wrong token is
// PERMISSION_DENIED. Refusals are logged at WARN, throttled per status code
// (1st, 2nd, 4th, 8th, ... refusal), with the method and the peer, never
// with the token or the value the caller presented.
//
// The metadata is read and compared by server/bearer_token.h: in the same
// time whatever the presented value, for a given length.
//
// Thread safety: Check may run concurrently. Copies share their refusal
// counters.
#ifndef KVINDEXER_SERVER_WRITE_AUTHORIZER_H_
#define KVINDEXER_SERVER_WRITE_AUTHORIZER_H_

#include <memory>
#include <string>
#include <string_view>

#include "common/doubling_throttle.h"
#include "grpcpp/grpcpp.h"
#include "server/bearer_token.h"

namespace kvindexer {

class WriteAuthorizer {
 public:
  // No token: every call is allowed.
  WriteAuthorizer();
  // REQUIRES: !token.empty().
  explicit WriteAuthorizer(std::string token);

  bool enabled() const { return !token_.empty(); }

  // OK, UNAUTHENTICATED or PERMISSION_DENIED for one mutating call of
  // `method` (a full method name, for the log line).
  grpc::Status Check(const grpc::ServerContextBase& context,
                     std::string_view method) const;

  // Refusals so far, by code.
  uint64_t unauthenticated_total() const;
  uint64_t permission_denied_total() const;

 private:
  struct Refusals {
    DoublingThrottle unauthenticated;
    DoublingThrottle permission_denied;
  };

  std::string token_;
  std::shared_ptr<Refusals> refusals_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_WRITE_AUTHORIZER_H_
