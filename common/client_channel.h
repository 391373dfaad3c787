// ClientSecurity: how a client of kv-indexer-server (the bridge, the CLI)
// reaches a server that uses TLS and a write token (docs/security.md).
//
// | Variable                         | Meaning | | KV_INDEXER_TLS_CA_FILE | PEM
// trust roots for the server's         | |                                  |
// certificate; turns TLS on                | | KV_INDEXER_TLS_CLIENT_CERT_FILE
// | PEM client certificate (mutual TLS);     | | | needs
// KV_INDEXER_TLS_CLIENT_KEY_FILE     | | KV_INDEXER_TLS_CLIENT_KEY_FILE   | PEM
// private key of that certificate      | | KV_INDEXER_TLS_SERVER_NAME       |
// name checked in the server certificate   | | | instead of the endpoint's host
// | | KV_INDEXER_WRITE_TOKEN_FILE      | file holding the token sent as | | |
// `authorization: Bearer <token>`          |
//
// Unset or blank variables are off. Every bad value (an unreadable or empty
// file, a certificate without its key, a server name without TLS, a token
// that cannot travel in a header) is an InvalidArgument naming the variable;
// messages quote file paths but never the token.
//
// Thread safety: the functions here are thread-safe; a ClientSecurity is a
// plain value.
#ifndef KVINDEXER_COMMON_CLIENT_CHANNEL_H_
#define KVINDEXER_COMMON_CLIENT_CHANNEL_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "common/indexer_endpoint.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer {

inline constexpr std::string_view kTlsCaFileVar = "KV_INDEXER_TLS_CA_FILE";
inline constexpr std::string_view kTlsClientCertFileVar =
    "KV_INDEXER_TLS_CLIENT_CERT_FILE";
inline constexpr std::string_view kTlsClientKeyFileVar =
    "KV_INDEXER_TLS_CLIENT_KEY_FILE";
inline constexpr std::string_view kTlsServerNameVar =
    "KV_INDEXER_TLS_SERVER_NAME";
// Shared with the server, which reads the token it expects from it.
inline constexpr std::string_view kWriteTokenFileVar =
    "KV_INDEXER_WRITE_TOKEN_FILE";
// The admin read token (docs/security.md, "The admin read token"): the
// server reads the token its admin calls require from it, kv-indexer-ctl
// the token it sends on them. The bridge never reads it.
inline constexpr std::string_view kAdminReadTokenFileVar =
    "KV_INDEXER_ADMIN_READ_TOKEN_FILE";

struct ClientSecurity {
  // True when a CA file or a client certificate is configured: the channel
  // then uses TLS whatever the endpoint's scheme says.
  bool tls = false;
  std::string root_certs_pem;   // empty: gRPC's default roots
  std::string client_cert_pem;  // empty: no client certificate
  std::string client_key_pem;   // set exactly when client_cert_pem is
  std::string server_name;      // empty: the endpoint's host is checked
  std::string write_token;      // empty: no authorization metadata

  bool has_write_token() const { return !write_token.empty(); }
};

// Reads the variables above. Errors name the variable (see the top).
[[nodiscard]] absl::StatusOr<ClientSecurity> LoadClientSecurity(
    const EnvLookup& env);

// TLS credentials when `security.tls` or `endpoint_tls` (an https://
// endpoint), plaintext otherwise.
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const ClientSecurity& security, bool endpoint_tls);

// A channel to `target` with those credentials; sets the server name override
// on `args` when KV_INDEXER_TLS_SERVER_NAME is set.
std::shared_ptr<grpc::Channel> CreateClientChannel(
    const std::string& target, const ClientSecurity& security,
    bool endpoint_tls, grpc::ChannelArguments args);

// A start-up WARN when `security` would send its write token in clear text
// to a `target` beyond loopback (no TLS, a host that is not a loopback
// literal; unix: sockets never warn); nullopt otherwise.
std::optional<std::string> PlaintextTokenWarning(
    const GrpcTarget& target, const ClientSecurity& security);

// Adds `authorization: Bearer <token>` to `context` when a token is set;
// nothing otherwise. Call it on every context that may carry a mutation.
void AddWriteToken(const ClientSecurity& security,
                   grpc::ClientContext* context);
// Adds `authorization: Bearer <token>` to `context` when `token` is not
// empty; nothing otherwise. At most one token goes on a context.
void AddBearerToken(std::string_view token, grpc::ClientContext* context);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_CLIENT_CHANNEL_H_
