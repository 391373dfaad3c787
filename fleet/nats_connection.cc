#include "fleet/nats_connection.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvindexer::fleet {
namespace {

// Reconnection: forever, at this pace, buffering this much meanwhile.
constexpr int64_t kReconnectWaitMs = 250;
constexpr int kReconnectBufferBytes = 8 << 20;

struct OptionsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};
using OptionsPtr = std::unique_ptr<natsOptions, OptionsDeleter>;

absl::Status OptionError(std::string_view what, natsStatus s) {
  return absl::InvalidArgumentError(
      absl::StrCat(AbslView(what), ": ", NatsErrorText(s)));
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        kNatsTokenFileVar, "=", path, " cannot be read: ", strerror(errno)));
  }
  std::ostringstream content;
  content << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(content.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kNatsTokenFileVar, "=", path, " holds no token (the file is empty)"));
  }
  return token;
}

absl::Status CheckReadable(const char* var, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(var, "=", path, " cannot be read: ", strerror(errno)));
  }
  return absl::OkStatus();
}

// The connection options of docs/fleet.md, "Configuration".
absl::StatusOr<OptionsPtr> MakeOptions(const NatsConnection& config) {
  natsOptions* raw = nullptr;
  natsStatus s = natsOptions_Create(&raw);
  if (s != NATS_OK) return OptionError("cannot create NATS options", s);
  OptionsPtr opts(raw);
  std::vector<const char*> servers;
  for (const std::string& url : config.urls) servers.push_back(url.c_str());
  s = natsOptions_SetServers(opts.get(), servers.data(),
                             static_cast<int>(servers.size()));
  if (s != NATS_OK) {
    return OptionError(
        absl::StrCat(kNatsUrlVar, "=", RedactedNatsUrls(config.urls),
                     " is not usable"),
        s);
  }
  // Connect in the order given: the first URL is the operator's choice.
  natsOptions_SetNoRandomize(opts.get(), true);
  natsOptions_SetTimeout(opts.get(), config.timeout_ms);
  natsOptions_SetMaxReconnect(opts.get(), -1);
  natsOptions_SetReconnectWait(opts.get(), kReconnectWaitMs);
  natsOptions_SetReconnectBufSize(opts.get(), kReconnectBufferBytes);
  if (!config.creds_file.empty()) {
    if (absl::Status r = CheckReadable(kNatsCredsFileVar, config.creds_file);
        !r.ok()) {
      return r;
    }
    s = natsOptions_SetUserCredentialsFromFiles(
        opts.get(), config.creds_file.c_str(), nullptr);
    if (s != NATS_OK) {
      return OptionError(absl::StrCat(kNatsCredsFileVar, "=", config.creds_file,
                                      " is not usable"),
                         s);
    }
  }
  if (!config.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(config.token_file);
    if (!token.ok()) return token.status();
    s = natsOptions_SetToken(opts.get(), token->c_str());
    if (s != NATS_OK) {
      return OptionError(absl::StrCat(kNatsTokenFileVar, "=", config.token_file,
                                      " is not usable"),
                         s);
    }
  }
  const bool tls_url =
      std::any_of(config.urls.begin(), config.urls.end(),
                  [](const std::string& u) { return u.starts_with("tls://"); });
  if (tls_url || !config.tls_ca_file.empty() || !config.tls_cert_file.empty()) {
    s = natsOptions_SetSecure(opts.get(), true);
    if (s != NATS_OK) {
      return OptionError("this libnats was built without TLS support", s);
    }
  }
  if (!config.tls_ca_file.empty()) {
    s = natsOptions_LoadCATrustedCertificates(opts.get(),
                                              config.tls_ca_file.c_str());
    if (s != NATS_OK) {
      return OptionError(absl::StrCat(kNatsTlsCaFileVar, "=",
                                      config.tls_ca_file, " is not usable"),
                         s);
    }
  }
  if (!config.tls_cert_file.empty()) {
    s = natsOptions_LoadCertificatesChain(
        opts.get(), config.tls_cert_file.c_str(), config.tls_key_file.c_str());
    if (s != NATS_OK) {
      return OptionError(
          absl::StrCat(kNatsTlsCertFileVar, "=", config.tls_cert_file, " / ",
                       kNatsTlsKeyFileVar, "=", config.tls_key_file,
                       " are not a usable certificate and key"),
          s);
    }
  }
  return opts;
}

}  // namespace

std::string NatsErrorText(natsStatus s) {
  const char* text = nats_GetLastError(nullptr);
  if (text != nullptr && *text != '\0') return text;
  return natsStatus_GetText(s);
}

std::string DescribeNatsFailure(natsStatus s, jsErrCode jerr) {
  std::string text = NatsErrorText(s);
  if (jerr != 0) absl::StrAppend(&text, " (JetStream error ", jerr, ")");
  return text;
}

absl::Status NatsUnavailable(std::string_view what, natsStatus s,
                             jsErrCode jerr) {
  return absl::UnavailableError(
      absl::StrCat(AbslView(what), ": ", DescribeNatsFailure(s, jerr)));
}

absl::StatusOr<std::shared_ptr<NatsClient>> NatsClient::Connect(
    const NatsConnection& config) {
  if (config.urls.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kNatsUrlVar, " names no NATS server"));
  }
  absl::StatusOr<OptionsPtr> opts = MakeOptions(config);
  if (!opts.ok()) return opts.status();
  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_Connect(&nc, opts->get());
  if (s != NATS_OK) {
    natsConnection_Destroy(nc);
    return absl::UnavailableError(absl::StrCat(
        "cannot connect to NATS at ", RedactedNatsUrls(config.urls), " (",
        kNatsUrlVar, "): ", NatsErrorText(s)));
  }
  jsOptions js_opts;
  jsOptions_Init(&js_opts);
  js_opts.Wait = config.timeout_ms;
  jsCtx* js = nullptr;
  s = natsConnection_JetStream(&js, nc, &js_opts);
  if (s != NATS_OK) {
    natsConnection_Close(nc);
    natsConnection_Destroy(nc);
    return absl::InternalError(
        absl::StrCat("cannot use JetStream: ", NatsErrorText(s)));
  }
  return std::shared_ptr<NatsClient>(new NatsClient(nc, js, config.timeout_ms));
}

NatsClient::~NatsClient() {
  jsCtx_Destroy(js_);
  natsConnection_Close(nc_);
  natsConnection_Destroy(nc_);
}

size_t NatsClient::max_payload() const {
  const int64_t max = natsConnection_GetMaxPayload(nc_);
  return max > 0 ? static_cast<size_t>(max) : 0;
}

bool NatsClient::connected() const {
  return natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

}  // namespace kvindexer::fleet
