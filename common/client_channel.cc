#include "common/client_channel.h"

#include "common/loopback_address.h"

#include <utility>

#include "absl/status/status.h"
#include "common/env_file.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

constexpr std::string_view kServerNameAccepted =
    "a DNS name or IP address present in the server certificate's "
    "subjectAltName, for example kv-indexer.internal";

}  // namespace

absl::StatusOr<ClientSecurity> LoadClientSecurity(const EnvLookup& env) {
  ClientSecurity security;
  if (auto path = LookupPath(env, kTlsCaFileVar)) {
    auto pem = ReadEnvNamedFile(kTlsCaFileVar, *path);
    if (!pem.ok()) return pem.status();
    security.root_certs_pem = *std::move(pem);
    security.tls = true;
  }
  const auto cert_path = LookupPath(env, kTlsClientCertFileVar);
  const auto key_path = LookupPath(env, kTlsClientKeyFileVar);
  if (cert_path.has_value() != key_path.has_value()) {
    const std::string_view missing =
        cert_path ? kTlsClientKeyFileVar : kTlsClientCertFileVar;
    const std::string_view given =
        cert_path ? kTlsClientCertFileVar : kTlsClientKeyFileVar;
    return absl::InvalidArgumentError(fmt::format(
        "{} is unset but {} is set: a client certificate and its private key "
        "go together; set both for mutual TLS, or neither",
        missing, given));
  }
  if (cert_path) {
    auto cert = ReadEnvNamedFile(kTlsClientCertFileVar, *cert_path);
    if (!cert.ok()) return cert.status();
    auto key = ReadEnvNamedFile(kTlsClientKeyFileVar, *key_path);
    if (!key.ok()) return key.status();
    security.client_cert_pem = *std::move(cert);
    security.client_key_pem = *std::move(key);
    security.tls = true;
  }
  if (auto name = LookupTrimmed(env, kTlsServerNameVar)) {
    if (!security.tls) {
      return InvalidEnvValueBecause(
          kTlsServerNameVar, *name,
          fmt::format("it only applies to TLS, which is off (neither {} nor "
                      "{} is set)",
                      kTlsCaFileVar, kTlsClientCertFileVar),
          fmt::format("{} set as well, or this variable unset", kTlsCaFileVar));
    }
    for (const char c : *name) {
      if (c < 0x21 || c > 0x7e) {
        return InvalidEnvValue(kTlsServerNameVar, *name, kServerNameAccepted);
      }
    }
    security.server_name = *std::move(name);
  }
  if (auto path = LookupPath(env, kWriteTokenFileVar)) {
    auto token = ReadTokenFile(kWriteTokenFileVar, *path);
    if (!token.ok()) return token.status();
    security.write_token = *std::move(token);
  }
  return security;
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const ClientSecurity& security, bool endpoint_tls) {
  if (!security.tls && !endpoint_tls) {
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = security.root_certs_pem;  // empty: default roots
  options.pem_private_key = security.client_key_pem;
  options.pem_cert_chain = security.client_cert_pem;
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::Channel> CreateClientChannel(
    const std::string& target, const ClientSecurity& security,
    bool endpoint_tls, grpc::ChannelArguments args) {
  if (!security.server_name.empty()) {
    args.SetSslTargetNameOverride(security.server_name);
  }
  return grpc::CreateCustomChannel(
      target, MakeChannelCredentials(security, endpoint_tls), args);
}

void AddWriteToken(const ClientSecurity& security,
                   grpc::ClientContext* context) {
  AddBearerToken(security.write_token, context);
}

void AddBearerToken(std::string_view token, grpc::ClientContext* context) {
  if (token.empty()) return;
  context->AddMetadata("authorization", "Bearer " + std::string(token));
}

std::optional<std::string> PlaintextTokenWarning(
    const GrpcTarget& target, const ClientSecurity& security) {
  if (!security.has_write_token() || security.tls || target.use_tls) {
    return std::nullopt;
  }
  std::string_view host = target.target;
  if (host.substr(0, 5) == "unix:") return std::nullopt;
  if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (IsLoopbackLiteral(host) || host == "localhost") return std::nullopt;
  return "the write token goes to " + target.target +
         " in clear text: anyone on the path can read it and write to the "
         "index; use an https:// endpoint or KV_INDEXER_TLS_CA_FILE "
         "(docs/security.md)";
}

}  // namespace kvindexer
