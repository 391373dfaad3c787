#include "bridge/cache_names.h"

#include <cctype>

namespace kvindexer::bridge {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<Tier> TierFromConfigName(std::string_view name) {
  if (EqualsIgnoreCase(name, "HBM") || EqualsIgnoreCase(name, "GPU")) {
    return Tier::kHbm;
  }
  if (EqualsIgnoreCase(name, "DRAM") || EqualsIgnoreCase(name, "CPU") ||
      EqualsIgnoreCase(name, "CPU_PINNED")) {
    return Tier::kDram;
  }
  if (EqualsIgnoreCase(name, "SSD") || EqualsIgnoreCase(name, "DISK")) {
    return Tier::kSsd;
  }
  return std::nullopt;
}

std::optional<Tier> TierFromMedium(std::string_view medium) {
  if (medium == "GPU") return Tier::kHbm;
  if (medium == "CPU_PINNED") return Tier::kDram;
  if (medium == "DISK") return Tier::kSsd;
  return std::nullopt;
}

std::optional<uint32_t> ComponentBitFromName(std::string_view name) {
  if (EqualsIgnoreCase(name, "full")) return kComponentFull;
  if (EqualsIgnoreCase(name, "swa")) return kComponentSwa;
  if (EqualsIgnoreCase(name, "mamba")) return kComponentMamba;
  return std::nullopt;
}

std::string_view TierName(Tier tier) {
  switch (tier) {
    case Tier::kHbm:
      return "HBM";
    case Tier::kDram:
      return "DRAM";
    case Tier::kSsd:
      return "SSD";
  }
  return "UNKNOWN";
}

}  // namespace kvindexer::bridge
