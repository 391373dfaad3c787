#include "common/indexer_endpoint.h"

#include <cctype>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer {
namespace {

absl::Status Invalid(std::string_view endpoint, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid indexer endpoint \"", std::string(endpoint),
      "\": ", std::string(why),
      " (accepted: http://host:port, https://host:port, unix:/path)"));
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

absl::StatusOr<GrpcTarget> ParseIndexerEndpoint(std::string_view endpoint) {
  if (StartsWith(endpoint, "unix:")) {
    std::string_view path = endpoint.substr(5);
    while (StartsWith(path, "//")) path.remove_prefix(1);
    if (path.empty() || path == "/") return Invalid(endpoint, "empty path");
    GrpcTarget t;
    t.target = absl::StrCat("unix:", std::string(path));
    return t;
  }
  GrpcTarget t;
  std::string_view rest;
  uint32_t port = 80;
  if (StartsWith(endpoint, "http://")) {
    rest = endpoint.substr(7);
  } else if (StartsWith(endpoint, "https://")) {
    rest = endpoint.substr(8);
    t.use_tls = true;
    port = 443;
  } else {
    return Invalid(endpoint, "missing http://, https:// or unix: scheme");
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos ||
      rest.find('?') != std::string_view::npos ||
      rest.find('#') != std::string_view::npos ||
      rest.find('@') != std::string_view::npos) {
    return Invalid(endpoint, "paths, queries and user info are not supported");
  }
  std::string_view host;
  std::string_view port_text;
  if (StartsWith(rest, "[")) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return Invalid(endpoint, "unterminated IPv6 literal");
    }
    host = rest.substr(0, close + 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Invalid(endpoint, "junk after host");
      port_text = after.substr(1);
      if (port_text.empty()) return Invalid(endpoint, "empty port");
    }
    if (host.size() <= 2) return Invalid(endpoint, "empty host");
  } else {
    const size_t colon = rest.find(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      if (port_text.empty()) return Invalid(endpoint, "empty port");
    }
    if (host.empty()) return Invalid(endpoint, "empty host");
    for (char c : host) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
            c == '-' || c == '_')) {
        return Invalid(endpoint, "bad character in host");
      }
    }
  }
  if (!port_text.empty()) {
    if (port_text.size() > 5) return Invalid(endpoint, "port out of range");
    port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9') return Invalid(endpoint, "port is not a number");
      port = port * 10 + static_cast<uint32_t>(c - '0');
    }
    if (port == 0 || port > 65535) {
      return Invalid(endpoint, "port out of range 1..65535");
    }
  }
  t.target = absl::StrCat(std::string(host), ":", port);
  return t;
}

}  // namespace kvindexer
