#include "core/placement_tally.h"

#include "absl/strings/string_view.h"

namespace kvindexer {
namespace {

absl::string_view Key(std::string_view id) {
  return absl::string_view(id.data(), id.size());
}

}  // namespace

uint64_t TotalOf(const TierCounts& counts) {
  uint64_t total = 0;
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    total += counts[tier];
  }
  return total;
}

void PlacementTally::Set(std::string_view worker_id, const TierCounts& counts) {
  Erase(worker_id);
  const uint64_t total = TotalOf(counts);
  if (total == 0) return;
  counts_.emplace(std::string(worker_id), counts);
  total_ += total;
}

void PlacementTally::Erase(std::string_view worker_id) {
  const auto it = counts_.find(Key(worker_id));
  if (it == counts_.end()) return;
  total_ -= TotalOf(it->second);
  counts_.erase(it);
}

void PlacementTally::Clear() {
  counts_.clear();
  total_ = 0;
}

TierCounts PlacementTally::Get(std::string_view worker_id) const {
  const auto it = counts_.find(Key(worker_id));
  return it != counts_.end() ? it->second : TierCounts{};
}

}  // namespace kvindexer
