// ReadAuthorizer: the admin read token check (docs/security.md, "The admin
// read token").
//
// With KV_INDEXER_ADMIN_READ_TOKEN_FILE set, every call of the admin
// service (kvindexer.admin.v1.KvIndexerAdmin: GetStats, ListWorkers,
// ExplainPrefix, and RemoveWorker after its write-token check) must carry
// `authorization: Bearer <token>`, the same metadata as the write token,
// holding either the read token or the write token: whoever may change the
// index may also look at it, and an operator's CLI with the write token
// needs no second secret. The router-facing reads of kv_indexer.v1 and
// grpc.health.v1 stay open. A call without the metadata, or with one that
// is not a bearer token, is UNAUTHENTICATED; a token that matches neither
// is PERMISSION_DENIED. Refusals are logged at WARN, throttled per code
// (1st, 2nd, 4th, 8th, ... refusal), with the method and the peer, never
// with a token or the value the caller presented.
//
// Both comparisons always run, each in a time that depends on lengths only
// (server/bearer_token.h).
//
// Thread safety: Check may run concurrently. Copies share their refusal
// counters.
#ifndef KVINDEXER_SERVER_READ_AUTHORIZER_H_
#define KVINDEXER_SERVER_READ_AUTHORIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/doubling_throttle.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer {

class ReadAuthorizer {
 public:
  // No read token: every admin call is allowed.
  ReadAuthorizer();
  // REQUIRES: !read_token.empty(). An empty `write_token` means the server
  // has none; a non-empty one is accepted as well.
  ReadAuthorizer(std::string read_token, std::string write_token);

  bool enabled() const { return !read_token_.empty(); }

  // OK, UNAUTHENTICATED or PERMISSION_DENIED for one admin call of `method`
  // (a full method name, for the log line).
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

  std::string read_token_;
  std::string write_token_;
  std::shared_ptr<Refusals> refusals_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_READ_AUTHORIZER_H_
