#include "bridge/worker_address.h"

#include <cctype>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::bridge {
namespace {

absl::Status Unusable(std::string_view address, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "worker address \"", std::string(address), "\" ", std::string(why)));
}

// Length of a URI scheme followed by "://" at the start of `s`, or 0.
size_t SchemeLength(std::string_view s) {
  const size_t sep = s.find("://");
  if (sep == std::string_view::npos || sep == 0) return 0;
  if (!std::isalpha(static_cast<unsigned char>(s[0]))) return 0;
  for (char c : s.substr(0, sep)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' &&
        c != '.') {
      return 0;
    }
  }
  return sep + 3;
}

}  // namespace

absl::StatusOr<WorkerHostPort> ParseWorkerHostPort(std::string_view address) {
  if (address.empty()) return Unusable(address, "is empty");
  std::string_view rest = address.substr(SchemeLength(address));
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    rest.remove_prefix(at + 1);
  }
  std::string_view host;
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return Unusable(address, "has an unterminated IPv6 literal");
    }
    host = rest.substr(1, close - 1);
    const std::string_view after = rest.substr(close + 1);
    if (after.empty()) return Unusable(address, "has no port");
    if (after.front() != ':') {
      return Unusable(address, "has text after its IPv6 literal");
    }
    port_text = after.substr(1);
  } else {
    const size_t colon = rest.find(':');
    if (colon == std::string_view::npos) {
      return Unusable(address, "has no port");
    }
    if (rest.find(':', colon + 1) != std::string_view::npos) {
      return Unusable(address,
                      "has no port (an IPv6 literal needs brackets: "
                      "[addr]:port)");
    }
    host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
  }
  if (host.empty()) return Unusable(address, "has no host");
  if (port_text.empty()) return Unusable(address, "has no port");
  if (port_text.size() > 5) {
    return Unusable(address, "has a port outside 1..65535");
  }
  uint32_t port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9') {
      return Unusable(address, "has a port that is not a decimal number");
    }
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > 65535) {
    return Unusable(address, "has a port outside 1..65535");
  }
  return WorkerHostPort{std::string(host), static_cast<uint16_t>(port)};
}

std::optional<std::string> WorkerAddressWarning(std::string_view address) {
  if (address.empty()) {
    return "KV_INDEXER_WORKER_ADDRESS is empty: routers get no address for "
           "this worker and the heartbeats run without a worker probe";
  }
  if (address.find("://") == std::string_view::npos) {
    return "KV_INDEXER_WORKER_ADDRESS=\"" + std::string(address) +
           "\" has no scheme; routers address workers by URL (for example "
           "http://10.0.0.5:30000)";
  }
  return std::nullopt;
}

}  // namespace kvindexer::bridge
