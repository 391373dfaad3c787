#include "fleet/fleet_config.h"

#include <sys/stat.h>

#include <string_view>
#include <utility>

#include "absl/strings/str_split.h"
#include "common/absl_view.h"

namespace kvindexer::fleet {
namespace {

// A NATS stream name may not hold whitespace, '.', '*', '>', path
// separators or control bytes; we also keep it to a portable alphabet.
bool IsValidStreamName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// One or more dot-separated tokens of the same alphabet: no wildcards, no
// empty tokens, no whitespace.
bool IsValidSubjectPrefix(std::string_view prefix) {
  if (prefix.empty() || prefix.size() > 128) return false;
  for (absl::string_view token : absl::StrSplit(AbslView(prefix), '.')) {
    if (!IsValidStreamName(std::string_view(token.data(), token.size())))
      return false;
  }
  return true;
}

bool IsValidUrl(std::string_view url) {
  for (std::string_view scheme : {"nats://", "tls://", "ws://", "wss://"}) {
    if (url.size() > scheme.size() && url.substr(0, scheme.size()) == scheme) {
      for (char c : url) {
        if (c <= ' ' || c == 0x7f) return false;
      }
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::vector<std::string>> ParseUrls(std::string_view value) {
  std::vector<std::string> urls;
  for (absl::string_view item : absl::StrSplit(AbslView(value), ',')) {
    std::string_view url(item.data(), item.size());
    while (!url.empty() && (url.front() == ' ' || url.front() == '\t'))
      url.remove_prefix(1);
    while (!url.empty() && (url.back() == ' ' || url.back() == '\t'))
      url.remove_suffix(1);
    if (url.empty()) {
      return InvalidEnvValueBecause(
          kNatsUrlVar, value, "it holds an empty item",
          "one or more comma-separated nats:// or tls:// URLs, for example "
          "nats://127.0.0.1:4222,nats://127.0.0.1:4223");
    }
    if (!IsValidUrl(url)) {
      return InvalidEnvValueBecause(
          kNatsUrlVar, value,
          "\"" + std::string(url) +
              "\" is not a nats://, tls://, ws:// or "
              "wss:// URL",
          "one or more comma-separated URLs, for example "
          "nats://127.0.0.1:4222");
    }
    urls.emplace_back(url);
  }
  return urls;
}

// A file variable: unset or blank is "", otherwise the file must exist and
// be a regular file we can name in the error now rather than at connect.
absl::Status ReadFileVar(const EnvLookup& env, std::string_view name,
                         std::string* out) {
  std::optional<std::string> value = LookupTrimmed(env, name);
  if (!value.has_value()) return absl::OkStatus();
  struct stat st {};
  if (::stat(value->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return InvalidEnvValue(name, *value, "the path of an existing file");
  }
  *out = *std::move(value);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EventLogConfig> ParseEventLogConfig(const EnvLookup& env) {
  EventLogConfig config;
  std::optional<std::string> urls = LookupTrimmed(env, kNatsUrlVar);
  if (!urls.has_value()) {
    return absl::InvalidArgumentError(
        std::string(kNatsUrlVar) +
        " is not set: fleet mode needs one or more comma-separated NATS "
        "server URLs, for example nats://127.0.0.1:4222");
  }
  absl::StatusOr<std::vector<std::string>> parsed = ParseUrls(*urls);
  if (!parsed.ok()) return parsed.status();
  config.nats.urls = *std::move(parsed);

  NatsConnection& nats = config.nats;
  for (auto [name, out] : {std::pair{kNatsCredsFileVar, &nats.creds_file},
                           std::pair{kNatsTokenFileVar, &nats.token_file},
                           std::pair{kNatsTlsCaFileVar, &nats.tls_ca_file},
                           std::pair{kNatsTlsCertFileVar, &nats.tls_cert_file},
                           std::pair{kNatsTlsKeyFileVar, &nats.tls_key_file}}) {
    if (absl::Status s = ReadFileVar(env, name, out); !s.ok()) return s;
  }
  if (nats.tls_cert_file.empty() != nats.tls_key_file.empty()) {
    const bool cert = !nats.tls_cert_file.empty();
    return absl::InvalidArgumentError(
        std::string(cert ? kNatsTlsCertFileVar : kNatsTlsKeyFileVar) +
        " is set without " + (cert ? kNatsTlsKeyFileVar : kNatsTlsCertFileVar) +
        ": a client certificate needs its key and the key its certificate");
  }
  if (!nats.creds_file.empty() && !nats.token_file.empty()) {
    return absl::InvalidArgumentError(
        std::string(kNatsCredsFileVar) + " and " + kNatsTokenFileVar +
        " are both set: choose one way to authenticate to NATS");
  }
  if (absl::Status s = ReadEnvUint32(
          env, kNatsTimeoutVar, Uint32Syntax{.min = 100, .max = 600000},
          "milliseconds in 100..600000, for example 5000", &nats.timeout_ms);
      !s.ok()) {
    return s;
  }

  if (std::optional<std::string> stream = LookupTrimmed(env, kNatsStreamVar)) {
    if (!IsValidStreamName(*stream)) {
      return InvalidEnvValue(kNatsStreamVar, *stream,
                             "1 to 64 letters, digits, '_' or '-', for "
                             "example KVINDEXER_EVENTS");
    }
    config.stream = *std::move(stream);
  }
  if (std::optional<std::string> prefix =
          LookupTrimmed(env, kNatsSubjectPrefixVar)) {
    if (!IsValidSubjectPrefix(*prefix)) {
      return InvalidEnvValue(kNatsSubjectPrefixVar, *prefix,
                             "dot-separated tokens of letters, digits, '_' "
                             "or '-' (no wildcards), for example "
                             "kvindexer or prod.kvindexer");
    }
    config.subject_prefix = *std::move(prefix);
  }
  if (absl::Status s =
          ReadEnvUint32(env, kNatsReplicasVar, Uint32Syntax{.min = 1, .max = 5},
                        "1..5 (3 in a three-node cluster)", &config.replicas);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadEnvUint32(
          env, kNatsDedupWindowVar, Uint32Syntax{.min = 1000, .max = 86400000},
          "milliseconds in 1000..86400000, for example 120000",
          &config.dedup_window_ms);
      !s.ok()) {
    return s;
  }
  return config;
}

std::string RedactedNatsUrls(const std::vector<std::string>& urls) {
  std::string out;
  for (const std::string& url : urls) {
    if (!out.empty()) out += ',';
    const size_t scheme = url.find("://");
    const size_t host_start = scheme == std::string::npos ? 0 : scheme + 3;
    const size_t authority_end = url.find('/', host_start);
    const size_t at =
        url.rfind('@', authority_end == std::string::npos ? std::string::npos
                                                          : authority_end);
    if (at == std::string::npos || at < host_start) {
      out += url;
      continue;
    }
    out += url.substr(0, host_start);
    out += "***";
    out += url.substr(at);
  }
  return out;
}

}  // namespace kvindexer::fleet
