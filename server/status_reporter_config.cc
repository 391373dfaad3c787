#include "server/status_reporter_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/absl_view.h"
#include "common/env_file.h"
#include "common/indexer_endpoint.h"
#include "fmt/format.h"
#include "server/status_report_validation.h"

namespace kvindexer {
namespace {

constexpr std::string_view kRouterUrlsAccepted =
    "a comma-separated list of router URLs, each http://host[:port][/path] "
    "or https://host[:port][/path], for example http://router-0:30000";
constexpr std::string_view kIndexerIdAccepted =
    "a non-blank name for this indexer, unique among the indexers reporting "
    "to a router (valid UTF-8)";
constexpr std::string_view kAdvertiseEndpointAccepted =
    "the address routers give their clients to reach this server: "
    "http://host[:port], https://host[:port] or unix:/path";
constexpr std::string_view kStatusIntervalAccepted =
    "a positive integer of milliseconds (1..4294967295), for example 100";
constexpr std::string_view kRouterTlsCaAccepted =
    "a readable PEM file of the CA certificates that verify https:// routers";

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         absl::EqualsIgnoreCase(AbslView(s.substr(0, prefix.size())),
                                AbslView(prefix));
}

bool IsHostNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '-' || c == '_';
}

bool IsPathChar(char c) { return c > 0x20 && c < 0x7F && c != '?' && c != '#'; }

}  // namespace

absl::StatusOr<RouterUrl> ParseRouterUrl(std::string_view item) {
  const auto bad = [&](std::string_view why) {
    return InvalidEnvValueBecause(kRouterUrlsVar, item,
                                  fmt::format("in that item, {}", why),
                                  kRouterUrlsAccepted);
  };
  RouterUrl url;
  std::string_view rest;
  if (StartsWithNoCase(item, "http://")) {
    rest = item.substr(7);
    url.port = 80;
  } else if (StartsWithNoCase(item, "https://")) {
    rest = item.substr(8);
    url.https = true;
    url.port = 443;
  } else {
    return bad("the scheme is not http:// or https://");
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return bad("a query or fragment is not supported");
  }
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return bad("user info is not supported: reports carry no credentials");
  }
  std::string_view port_text;
  std::string_view host_text;  // as written, brackets included
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return bad("an IPv6 literal has no closing bracket");
    }
    host_text = authority.substr(0, close + 1);
    url.host = std::string(authority.substr(1, close - 1));
    in6_addr address;
    if (url.host.find('\0') != std::string::npos ||
        inet_pton(AF_INET6, url.host.c_str(), &address) != 1) {
      return bad("the bracketed host is not an IPv6 literal");
    }
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("junk follows the host");
      port_text = after.substr(1);
      if (port_text.empty()) return bad("the port is empty");
    }
  } else {
    const size_t colon = authority.find(':');
    host_text = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return bad("the port is empty");
    }
    if (host_text.empty()) return bad("there is no host");
    if (!std::all_of(host_text.begin(), host_text.end(), IsHostNameChar)) {
      return bad("the host has a character other than A-Z a-z 0-9 . - _");
    }
    url.host = std::string(host_text);
  }
  if (!port_text.empty()) {
    absl::StatusOr<uint32_t> port =
        ParseEnvUint32(kRouterUrlsVar, port_text, {.min = 1, .max = 65535}, "");
    if (!port.ok()) return bad("the port is not a number in 1..65535");
    url.port = static_cast<uint16_t>(*port);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (!std::all_of(path.begin(), path.end(), IsPathChar)) {
    return bad("the path has a space, a control character or non-ASCII");
  }
  url.url = fmt::format("{}://{}{}{}", url.https ? "https" : "http", host_text,
                        port_text.empty() ? "" : ":", port_text);
  url.url += path;
  url.status_path = std::string(path) + std::string(kStatusReportPath);
  return url;
}

absl::StatusOr<StatusReporterConfig> LoadStatusReporterConfig(
    const EnvLookup& env) {
  StatusReporterConfig config;
  if (const std::optional<std::string> value = env(kRouterUrlsVar)) {
    if (!IsValidUtf8(*value)) {
      return InvalidEnvValue(kRouterUrlsVar, *value, kRouterUrlsAccepted);
    }
    for (const absl::string_view piece : absl::StrSplit(*value, ',')) {
      const absl::string_view item = absl::StripAsciiWhitespace(piece);
      if (item.empty()) continue;
      absl::StatusOr<RouterUrl> url =
          ParseRouterUrl(std::string_view(item.data(), item.size()));
      if (!url.ok()) return url.status();
      const bool seen = std::any_of(
          config.routers.begin(), config.routers.end(),
          [&](const RouterUrl& other) { return other.url == url->url; });
      if (!seen) config.routers.push_back(*std::move(url));
    }
  }

  if (const std::optional<std::string> value = env(kIndexerIdVar)) {
    const absl::string_view trimmed = absl::StripAsciiWhitespace(*value);
    if (!IsValidUtf8(*value) ||
        IsBlankText(std::string_view(trimmed.data(), trimmed.size()))) {
      return InvalidEnvValue(kIndexerIdVar, *value, kIndexerIdAccepted);
    }
    config.indexer_id = std::string(trimmed);
  } else if (const std::optional<std::string> host =
                 LookupTrimmed(env, "HOSTNAME");
             host.has_value() && IsValidUtf8(*host) && !IsBlankText(*host)) {
    config.indexer_id = *host;
  }

  if (const std::optional<std::string> value =
          LookupTrimmed(env, kAdvertiseEndpointVar)) {
    if (!IsValidUtf8(*value)) {
      return InvalidEnvValue(kAdvertiseEndpointVar, *value,
                             kAdvertiseEndpointAccepted);
    }
    if (absl::StatusOr<GrpcTarget> target = ParseIndexerEndpoint(*value);
        !target.ok()) {
      return InvalidEnvValueBecause(kAdvertiseEndpointVar, *value,
                                    std::string(target.status().message()),
                                    kAdvertiseEndpointAccepted);
    }
    config.advertise_endpoint = *value;
  } else if (config.enabled()) {
    return absl::InvalidArgumentError(fmt::format(
        "{} is unset but {} is set: status reports must carry {}",
        kAdvertiseEndpointVar, kRouterUrlsVar, kAdvertiseEndpointAccepted));
  }

  if (absl::Status s =
          ReadEnvUint32(env, kStatusIntervalMsVar, {.min = 1},
                        kStatusIntervalAccepted, &config.interval_ms);
      !s.ok()) {
    return s;
  }

  if (const std::optional<std::string> path =
          LookupPath(env, kRouterTlsCaFileVar)) {
    absl::StatusOr<std::string> pem =
        ReadEnvNamedFile(kRouterTlsCaFileVar, *path);
    if (!pem.ok()) return pem.status();
    if (pem->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return InvalidEnvValueBecause(kRouterTlsCaFileVar, *path,
                                    "the file holds no PEM certificate",
                                    kRouterTlsCaAccepted);
    }
    config.router_tls_ca_file = *path;
  }
  return config;
}

}  // namespace kvindexer
