#include "ctl/admin_connection.h"

#include <map>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/env_file.h"
#include "common/indexer_endpoint.h"

namespace kvindexer::ctl {
namespace {

// The environment with each given flag in place of its variable, so that
// LoadClientSecurity applies one set of rules to both.
EnvLookup WithFlags(const CtlOptions& options, const EnvLookup& env) {
  std::map<std::string, std::string, std::less<>> flags;
  auto put = [&](std::string_view variable,
                 const std::optional<std::string>& value) {
    if (value) flags.emplace(std::string(variable), *value);
  };
  put(kTlsCaFileVar, options.tls_ca_file);
  put(kTlsClientCertFileVar, options.tls_cert_file);
  put(kTlsClientKeyFileVar, options.tls_key_file);
  put(kTlsServerNameVar, options.tls_server_name);
  put(kWriteTokenFileVar, options.token_file);
  put(kAdminReadTokenFileVar, options.read_token_file);
  return [flags = std::move(flags),
          env](std::string_view name) -> std::optional<std::string> {
    auto it = flags.find(name);
    if (it != flags.end()) return it->second;
    return env(name);
  };
}

}  // namespace

absl::StatusOr<AdminConnection> ResolveConnection(const CtlOptions& options,
                                                  const EnvLookup& env) {
  AdminConnection c;
  std::string source = "--endpoint";
  if (options.endpoint) {
    c.endpoint = *options.endpoint;
  } else if (std::optional<std::string> v =
                 LookupTrimmed(env, "KV_INDEXER_ENDPOINT")) {
    c.endpoint = *v;
    source = "KV_INDEXER_ENDPOINT";
  } else {
    c.endpoint = kDefaultEndpoint;
  }
  absl::StatusOr<GrpcTarget> target = ParseIndexerEndpoint(c.endpoint);
  if (!target.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", target.status().message()));
  }
  c.target = target->target;
  c.endpoint_tls = target->use_tls;
  const EnvLookup with_flags = WithFlags(options, env);
  absl::StatusOr<ClientSecurity> security = LoadClientSecurity(with_flags);
  if (!security.ok()) return security.status();
  c.security = *std::move(security);
  if (std::optional<std::string> path =
          LookupPath(with_flags, kAdminReadTokenFileVar)) {
    absl::StatusOr<std::string> token =
        ReadTokenFile(kAdminReadTokenFileVar, *path);
    if (!token.ok()) return token.status();
    c.read_token = *std::move(token);
  }
  return c;
}

std::shared_ptr<grpc::Channel> OpenChannel(const AdminConnection& connection) {
  grpc::ChannelArguments args;
  // One short-lived process, one connection: no shared reconnect backoff.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return CreateClientChannel(connection.target, connection.security,
                             connection.endpoint_tls, std::move(args));
}

}  // namespace kvindexer::ctl
