// Name tables for tiers, event mediums and cache components
// (docs/bridge-events.md, "Event batches > Medium to tier",
// "Event batches > Components and block size" and
// "Configuration > Variables").
#ifndef KVINDEXER_BRIDGE_CACHE_NAMES_H_
#define KVINDEXER_BRIDGE_CACHE_NAMES_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "bridge/kv_events.h"

namespace kvindexer::bridge {

// Configuration tier names, case-insensitive: HBM/GPU, DRAM/CPU/CPU_PINNED,
// SSD/DISK. Anything else (e.g. NVME) yields nullopt.
std::optional<Tier> TierFromConfigName(std::string_view name);

// SGLang event medium strings, matched exactly: "GPU", "CPU_PINNED", "DISK".
// "EXTERNAL", "CPU" and every other string yield nullopt.
std::optional<Tier> TierFromMedium(std::string_view medium);

// Component names, case-insensitive: full = 1, swa = 2, mamba = 4.
std::optional<uint32_t> ComponentBitFromName(std::string_view name);

// "HBM", "DRAM" or "SSD".
std::string_view TierName(Tier tier);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_CACHE_NAMES_H_
