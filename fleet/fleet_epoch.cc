#include "fleet/fleet_epoch.h"

#include <openssl/sha.h>

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::fleet {

std::string FleetEpochInput(const LogIdentity& identity) {
  std::string input = identity.stream;
  input.push_back('\0');
  input += identity.subject_prefix;
  input.push_back('\0');
  input += std::to_string(identity.created_unix_ns);
  return input;
}

std::string FleetEpoch(const LogIdentity& identity) {
  const std::string input = FleetEpochInput(identity);
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(),
         digest.data());
  const std::string hex = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest.data()), 16));
  return absl::StrCat(hex.substr(0, 8), "-", hex.substr(8, 4), "-",
                      hex.substr(12, 4), "-", hex.substr(16, 4), "-",
                      hex.substr(20, 12));
}

}  // namespace kvindexer::fleet
