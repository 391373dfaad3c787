#include "ctl/admin_connection.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "bridge/indexer_endpoint.h"

namespace kvindexer::ctl {
namespace {

// The flag's value when given, else the variable's (blank counts as unset).
std::optional<std::string> FlagOrEnv(const std::optional<std::string>& flag,
                                     const EnvLookup& env,
                                     std::string_view variable) {
  if (flag) return flag;
  return LookupTrimmed(env, variable);
}

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot read ", std::string(what), " ", QuoteEnvValue(path)));
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
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
  absl::StatusOr<bridge::GrpcTarget> target =
      bridge::ParseIndexerEndpoint(c.endpoint);
  if (!target.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", target.status().message()));
  }
  c.target = target->target;
  c.use_tls = target->use_tls;
  c.tls_ca_file = FlagOrEnv(options.tls_ca_file, env, "KV_INDEXER_TLS_CA_FILE");
  c.tls_cert_file =
      FlagOrEnv(options.tls_cert_file, env, "KV_INDEXER_TLS_CLIENT_CERT_FILE");
  c.tls_key_file =
      FlagOrEnv(options.tls_key_file, env, "KV_INDEXER_TLS_CLIENT_KEY_FILE");
  c.tls_server_name =
      FlagOrEnv(options.tls_server_name, env, "KV_INDEXER_TLS_SERVER_NAME");
  c.token_file =
      FlagOrEnv(options.token_file, env, "KV_INDEXER_WRITE_TOKEN_FILE");
  if (c.tls_cert_file.has_value() != c.tls_key_file.has_value()) {
    return absl::InvalidArgumentError(
        "a client certificate needs both --tls-cert "
        "(KV_INDEXER_TLS_CLIENT_CERT_FILE) and --tls-key "
        "(KV_INDEXER_TLS_CLIENT_KEY_FILE)");
  }
  // TLS files with a plaintext endpoint would be silently ignored.
  if (!c.use_tls && (c.tls_ca_file || c.tls_cert_file)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS files are set but the endpoint \"", c.endpoint,
                     "\" is plaintext: use https://host:port"));
  }
  return c;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(
    const AdminConnection& connection) {
  grpc::ChannelArguments args;
  // One short-lived process, one connection: no shared reconnect backoff.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (connection.use_tls) {
    grpc::SslCredentialsOptions ssl;
    if (connection.tls_ca_file) {
      absl::StatusOr<std::string> pem =
          ReadFile(*connection.tls_ca_file, "TLS CA file");
      if (!pem.ok()) return pem.status();
      ssl.pem_root_certs = *std::move(pem);
    }
    if (connection.tls_cert_file) {
      absl::StatusOr<std::string> cert =
          ReadFile(*connection.tls_cert_file, "TLS client certificate");
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key =
          ReadFile(*connection.tls_key_file, "TLS client key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    if (connection.tls_server_name) {
      args.SetSslTargetNameOverride(*connection.tls_server_name);
    }
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  return grpc::CreateCustomChannel(connection.target, creds, args);
}

absl::StatusOr<std::optional<std::string>> ReadWriteToken(
    const AdminConnection& connection) {
  if (!connection.token_file) return std::optional<std::string>();
  absl::StatusOr<std::string> content =
      ReadFile(*connection.token_file, "write token file");
  if (!content.ok()) return content.status();
  std::string token(absl::StripAsciiWhitespace(*content));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("write token file ", QuoteEnvValue(*connection.token_file),
                     " is empty"));
  }
  return std::optional<std::string>(std::move(token));
}

}  // namespace kvindexer::ctl
