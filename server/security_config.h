// SecurityConfig: TLS and the write token of kv-indexer-server
// (docs/security.md).
//
// | Variable                       | Default | Meaning                        |
// | KV_INDEXER_TLS_CERT_FILE       | unset   | PEM certificate chain; with    |
// |                                |         | the key, the server speaks TLS |
// | KV_INDEXER_TLS_KEY_FILE        | unset   | PEM private key of it          |
// | KV_INDEXER_TLS_CLIENT_CA_FILE  | unset   | PEM roots that client          |
// |                                |         | certificates must chain to:    |
// |                                |         | mutual TLS, a client without   |
// |                                |         | one is refused at the handshake|
// | KV_INDEXER_WRITE_TOKEN_FILE    | unset   | file holding the token every   |
// |                                |         | mutation must carry            |
// | KV_INDEXER_ADMIN_READ_TOKEN_FILE | unset | file holding the token every   |
// |                                |         | admin call must carry (the     |
// |                                |         | write token is accepted too)   |
//
// The certificate and the key go together (both or neither), and a client CA
// needs them. Unreadable or empty files are errors naming the variable and
// the path; the token's content is never part of a message. The read token
// follows the write token's rules (common/env_file.h, ReadTokenFile) and
// must differ from it: a read token that writes would defeat its purpose.
#ifndef KVINDEXER_SERVER_SECURITY_CONFIG_H_
#define KVINDEXER_SERVER_SECURITY_CONFIG_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/client_channel.h"  // kWriteTokenFileVar, kAdminReadTokenFileVar
#include "common/env.h"
#include "grpcpp/security/server_credentials.h"

namespace kvindexer {

inline constexpr std::string_view kTlsCertFileVar = "KV_INDEXER_TLS_CERT_FILE";
inline constexpr std::string_view kTlsKeyFileVar = "KV_INDEXER_TLS_KEY_FILE";
inline constexpr std::string_view kTlsClientCaFileVar =
    "KV_INDEXER_TLS_CLIENT_CA_FILE";

struct SecurityConfig {
  // Paths as given, for the startup log.
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  std::string token_file;
  std::string read_token_file;
  // Contents.
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_pem;
  std::string write_token;       // empty: mutations are open
  std::string admin_read_token;  // empty: admin calls are open

  bool tls() const { return !cert_pem.empty(); }
  bool mutual_tls() const { return !client_ca_pem.empty(); }
  bool has_write_token() const { return !write_token.empty(); }
  bool has_admin_read_token() const { return !admin_read_token.empty(); }
};

// Reads the variables above; unset ones leave their part off.
[[nodiscard]] absl::StatusOr<SecurityConfig> LoadSecurityConfig(
    const EnvLookup& env);

// SslServerCredentials when TLS is on (requiring and verifying a client
// certificate under mutual TLS), InsecureServerCredentials otherwise.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const SecurityConfig& config);

// True for 127.0.0.0/8, [::1] and localhost, with a port
// ("127.0.0.1:50051", "[::1]:0").
bool IsLoopbackListenAddr(std::string_view listen_addr);

// The warning to log at start when the server listens beyond loopback
// without TLS or without a write token; nullopt when there is nothing to
// warn about. It says what is missing and what a peer on the network could
// do because of it.
std::optional<std::string> BeyondLoopbackWarning(std::string_view listen_addr,
                                                 const SecurityConfig& config);

// One line for the startup log: which protections are on (never the token).
std::string SecuritySummary(const SecurityConfig& config);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SECURITY_CONFIG_H_
