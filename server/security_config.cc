#include "server/security_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <utility>

#include "absl/status/status.h"
#include "common/env_file.h"
#include "fmt/format.h"
#include "grpcpp/security/server_credentials.h"

namespace kvindexer {

absl::StatusOr<SecurityConfig> LoadSecurityConfig(const EnvLookup& env) {
  SecurityConfig config;
  const auto cert = LookupPath(env, kTlsCertFileVar);
  const auto key = LookupPath(env, kTlsKeyFileVar);
  if (cert.has_value() != key.has_value()) {
    const std::string_view missing = cert ? kTlsKeyFileVar : kTlsCertFileVar;
    const std::string_view given = cert ? kTlsCertFileVar : kTlsKeyFileVar;
    return absl::InvalidArgumentError(fmt::format(
        "{} is unset but {} is set: TLS needs both the certificate and its "
        "private key; set both, or neither for plaintext",
        missing, given));
  }
  if (cert) {
    auto cert_pem = ReadEnvNamedFile(kTlsCertFileVar, *cert);
    if (!cert_pem.ok()) return cert_pem.status();
    auto key_pem = ReadEnvNamedFile(kTlsKeyFileVar, *key);
    if (!key_pem.ok()) return key_pem.status();
    config.cert_file = *cert;
    config.key_file = *key;
    config.cert_pem = *std::move(cert_pem);
    config.key_pem = *std::move(key_pem);
  }
  if (auto ca = LookupPath(env, kTlsClientCaFileVar)) {
    if (!config.tls()) {
      return absl::InvalidArgumentError(fmt::format(
          "{} is set but TLS is off: mutual TLS needs {} and {} as well",
          kTlsClientCaFileVar, kTlsCertFileVar, kTlsKeyFileVar));
    }
    auto ca_pem = ReadEnvNamedFile(kTlsClientCaFileVar, *ca);
    if (!ca_pem.ok()) return ca_pem.status();
    config.client_ca_file = *ca;
    config.client_ca_pem = *std::move(ca_pem);
  }
  if (auto path = LookupPath(env, kWriteTokenFileVar)) {
    auto token = ReadTokenFile(kWriteTokenFileVar, *path);
    if (!token.ok()) return token.status();
    config.token_file = *path;
    config.write_token = *std::move(token);
  }
  if (auto path = LookupPath(env, kAdminReadTokenFileVar)) {
    auto token = ReadTokenFile(kAdminReadTokenFileVar, *path);
    if (!token.ok()) return token.status();
    if (*token == config.write_token) {
      return absl::InvalidArgumentError(fmt::format(
          "{}={} is invalid: it holds the same token as {}, so every reader "
          "could also change the index; give the admin read token a value "
          "of its own (for example: openssl rand -hex 32)",
          kAdminReadTokenFileVar, QuoteEnvValue(*path), kWriteTokenFileVar));
    }
    config.read_token_file = *path;
    config.admin_read_token = *std::move(token);
  }
  return config;
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const SecurityConfig& config) {
  if (!config.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      config.mutual_tls()
          ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
          : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_root_certs = config.client_ca_pem;
  options.pem_key_cert_pairs.push_back({config.key_pem, config.cert_pem});
  return grpc::SslServerCredentials(options);
}

bool IsLoopbackListenAddr(std::string_view listen_addr) {
  std::string host;
  if (!listen_addr.empty() && listen_addr.front() == '[') {
    const size_t close = listen_addr.find(']');
    if (close == std::string_view::npos) return false;
    host = std::string(listen_addr.substr(1, close - 1));
  } else {
    const size_t colon = listen_addr.rfind(':');
    host = std::string(listen_addr.substr(0, colon));
  }
  if (host == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

std::optional<std::string> BeyondLoopbackWarning(std::string_view listen_addr,
                                                 const SecurityConfig& config) {
  if (IsLoopbackListenAddr(listen_addr)) return std::nullopt;
  if (config.tls() && config.has_write_token()) return std::nullopt;
  std::string missing;
  std::string risk;
  if (!config.tls()) {
    missing =
        fmt::format("TLS ({} and {} unset)", kTlsCertFileVar, kTlsKeyFileVar);
    risk =
        "anyone on the network path can read every request and answer and "
        "alter them in flight";
  }
  if (!config.has_write_token()) {
    if (!missing.empty()) missing += " and ";
    missing += fmt::format("a write token ({} unset)", kWriteTokenFileVar);
    if (!risk.empty()) risk += "; ";
    risk +=
        "any peer that reaches the port can apply, replace, clear or "
        "reconfigure the index of any worker, so that the router sends "
        "requests to the wrong workers";
  } else {
    risk +=
        ", including the write token the bridge sends, which lets them "
        "change the index";
  }
  return fmt::format(
      "listening beyond loopback on {} without {}: {}. See docs/security.md",
      listen_addr, missing, risk);
}

std::string SecuritySummary(const SecurityConfig& config) {
  return fmt::format(
      "security tls={} mutual_tls={} write_token={} admin_read_token={} "
      "cert_file={} client_ca_file={} token_file={} read_token_file={}",
      config.tls() ? "on" : "off", config.mutual_tls() ? "on" : "off",
      config.has_write_token() ? "required" : "off",
      config.has_admin_read_token() ? "required" : "off",
      config.cert_file.empty() ? "-" : config.cert_file,
      config.client_ca_file.empty() ? "-" : config.client_ca_file,
      config.token_file.empty() ? "-" : config.token_file,
      config.read_token_file.empty() ? "-" : config.read_token_file);
}

}  // namespace kvindexer
