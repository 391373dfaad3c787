// The bearer token a call presents, and how it is compared with the one the
// server expects (docs/security.md, "Refusals"). Shared by the write token
// check (server/write_authorizer.h) and the admin read token check
// (server/read_authorizer.h), so that both read the same metadata the same
// way: `authorization: Bearer <token>`, the scheme in any letter case.
//
// Thread safety: the functions here are thread-safe.
#ifndef KVINDEXER_SERVER_BEARER_TOKEN_H_
#define KVINDEXER_SERVER_BEARER_TOKEN_H_

#include <string_view>

#include "grpcpp/grpcpp.h"

namespace kvindexer {

inline constexpr std::string_view kAuthorizationHeader = "authorization";

// What a call's `authorization` metadata holds. Exactly one of `token` and
// `problem` is non-empty: the presented token, or why there is none (no
// metadata, or a value that is not a bearer token), for an
// UNAUTHENTICATED answer. Both view the context's metadata or static text;
// valid while the context is.
struct PresentedToken {
  std::string_view token;
  std::string_view problem;
};
PresentedToken PresentedBearerToken(const grpc::ServerContextBase& context);

// True when `presented` equals `expected`, in a time that depends on their
// lengths only, so that timing does not reveal how much of a guess was
// right.
bool TokensEqual(std::string_view presented, std::string_view expected);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_BEARER_TOKEN_H_
