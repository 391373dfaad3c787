#include "common/metrics_address.h"

#include <arpa/inet.h>

#include <charconv>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

absl::Status Invalid(std::string_view variable, std::string_view value,
                     std::string_view why) {
  return absl::InvalidArgumentError(fmt::format(
      "{}=\"{}\": {}; expected host:port with an IPv4 literal, a bracketed "
      "IPv6 literal or localhost, and a port 0..65535 (for example "
      "127.0.0.1:9464)",
      variable, value, why));
}

}  // namespace

std::string MetricsAddress::ToString() const {
  if (host.find(':') != std::string::npos) {
    return fmt::format("[{}]:{}", host, port);
  }
  return fmt::format("{}:{}", host, port);
}

absl::StatusOr<MetricsAddress> ParseMetricsAddress(std::string_view variable,
                                                   std::string_view value) {
  const size_t colon = value.rfind(':');
  if (colon == std::string_view::npos) {
    return Invalid(variable, value, "no port");
  }
  std::string_view host = value.substr(0, colon);
  const std::string_view port_text = value.substr(colon + 1);

  MetricsAddress address;
  if (host.starts_with('[')) {
    if (!host.ends_with(']')) return Invalid(variable, value, "unclosed '['");
    host = host.substr(1, host.size() - 2);
    in6_addr v6;
    if (inet_pton(AF_INET6, std::string(host).c_str(), &v6) != 1) {
      return Invalid(variable, value, "not an IPv6 literal");
    }
  } else if (host != "localhost") {
    in_addr v4;
    if (inet_pton(AF_INET, std::string(host).c_str(), &v4) != 1) {
      return Invalid(variable, value, "not an IPv4 literal or localhost");
    }
  }
  address.host = std::string(host);

  uint32_t port = 0;
  const auto [end, ec] = std::from_chars(
      port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() ||
      end != port_text.data() + port_text.size() || port > 65535) {
    return Invalid(variable, value, "bad port");
  }
  address.port = static_cast<uint16_t>(port);
  return address;
}

}  // namespace kvindexer
