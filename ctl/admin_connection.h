// Where kv-indexer-ctl connects and how (docs/cli.md, "Flags and
// environment"): the endpoint as the bridge reads it (KV_INDEXER_ENDPOINT,
// common/indexer_endpoint.h) and TLS and the write token exactly as the
// bridge reads them (common/client_channel.h). Each --tls-*/--token-file flag
// stands for its variable and overrides it.
#ifndef KVINDEXER_CTL_ADMIN_CONNECTION_H_
#define KVINDEXER_CTL_ADMIN_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

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
  ClientSecurity security;    // TLS files read, token loaded
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
