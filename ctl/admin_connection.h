// Where kv-indexer-ctl connects and how (docs/cli.md, "Flags and
// environment"): the endpoint as the bridge reads it (KV_INDEXER_ENDPOINT,
// common/indexer_endpoint.h), TLS and the write token exactly as the
// bridge reads them (common/client_channel.h), and the admin read token
// (KV_INDEXER_ADMIN_READ_TOKEN_FILE, read by the write token's rules). Each
// --tls-*/--token-file/--read-token-file flag stands for its variable and
// overrides it.
//
// Which token goes on a call (docs/security.md, "The admin read token"):
// reads carry the read token, or the write token when no read token is
// set (the server accepts either); remove-worker carries the write token,
// or the read token when no write token is set. Never both.
#ifndef KVINDEXER_CTL_ADMIN_CONNECTION_H_
#define KVINDEXER_CTL_ADMIN_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/client_channel.h"
#include "common/env.h"
#include "ctl/ctl_options.h"

namespace kvindexer::ctl {

// The bridge's default (bridge/bridge_config.h) and the server's default
// listen address.
inline constexpr char kDefaultEndpoint[] = "http://[::1]:50051";

struct AdminConnection {
  std::string endpoint;       // as the operator wrote it: for messages
  std::string target;         // gRPC channel target
  bool endpoint_tls = false;  // https://
  ClientSecurity security;    // TLS files read, write token loaded
  std::string read_token;     // empty: none

  // The token for a read (GetStats, ListWorkers, ExplainPrefix) and for a
  // change (RemoveWorker); empty: none.
  std::string_view ReadCredential() const {
    return !read_token.empty() ? read_token : security.write_token;
  }
  std::string_view WriteCredential() const {
    return !security.write_token.empty() ? security.write_token : read_token;
  }
};

// Resolves flags and environment and reads the TLS and token files.
// InvalidArgument naming the flag or the variable for an endpoint that does
// not parse or a bad TLS or token setting.
[[nodiscard]] absl::StatusOr<AdminConnection> ResolveConnection(
    const CtlOptions& options, const EnvLookup& env);

// The channel to the server.
std::shared_ptr<grpc::Channel> OpenChannel(const AdminConnection& connection);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_ADMIN_CONNECTION_H_
