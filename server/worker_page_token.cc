#include "server/worker_page_token.h"

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "common/absl_view.h"

namespace kvindexer {
namespace {

constexpr std::string_view kPrefix = "w1.";

bool IsLowerHex(std::string_view text) {
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string EncodeWorkerPageToken(std::string_view last_worker_id) {
  return std::string(kPrefix) +
         absl::BytesToHexString(AbslView(last_worker_id));
}

absl::StatusOr<std::string> DecodeWorkerPageToken(std::string_view token) {
  if (token.empty()) return std::string();
  const std::string_view hex = token.substr(
      token.size() >= kPrefix.size() ? kPrefix.size() : token.size());
  if (!absl::StartsWith(AbslView(token), AbslView(kPrefix)) || hex.empty() ||
      hex.size() % 2 != 0 || !IsLowerHex(hex)) {
    return absl::InvalidArgumentError(
        "page_token is not one a ListWorkers answer gave");
  }
  return absl::HexStringToBytes(AbslView(hex));
}

}  // namespace kvindexer
