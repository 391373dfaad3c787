// Where kv-indexer-ctl connects and how (docs/cli.md, "Flags and
// environment"): the endpoint, TLS files and write token, each from its flag
// or else from the same variable the bridge reads. A flag overrides its
// variable.
#ifndef KVINDEXER_CTL_ADMIN_CONNECTION_H_
#define KVINDEXER_CTL_ADMIN_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "ctl/ctl_options.h"

namespace kvindexer::ctl {

// The bridge's default (bridge/bridge_config.h) and the server's default
// listen address.
inline constexpr char kDefaultEndpoint[] = "http://[::1]:50051";

struct AdminConnection {
  std::string endpoint;  // as the operator wrote it: for messages
  std::string target;    // gRPC channel target
  bool use_tls = false;
  std::optional<std::string> tls_ca_file;
  std::optional<std::string> tls_cert_file;
  std::optional<std::string> tls_key_file;
  std::optional<std::string> tls_server_name;
  std::optional<std::string> token_file;
};

// Resolves flags and environment. InvalidArgument naming the flag or the
// variable for an endpoint that does not parse or a half-configured client
// certificate.
[[nodiscard]] absl::StatusOr<AdminConnection> ResolveConnection(
    const CtlOptions& options, const EnvLookup& env);

// The channel to the server. TLS files are read here: an unreadable one is
// InvalidArgument naming the file.
[[nodiscard]] absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(
    const AdminConnection& connection);

// The write token for mutations: the trimmed content of the token file, or
// nullopt when none is configured. InvalidArgument when the file cannot be
// read or is empty.
[[nodiscard]] absl::StatusOr<std::optional<std::string>> ReadWriteToken(
    const AdminConnection& connection);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_ADMIN_CONNECTION_H_
