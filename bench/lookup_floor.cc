#include "lookup_floor.h"

namespace kvindexer::bench {

LookupFloor::LookupFloor(const ScenarioSpec& spec) {
  const uint64_t blocks = FillerBlocks(spec);
  map_.reserve(blocks + kHeadlineBlocks);
  arena_.reserve(blocks * spec.placements_per_block +
                 uint64_t{kHeadlineBlocks} * kHeadlineWorkers);
  const auto add = [&](int64_t hash, uint32_t first_worker, uint32_t count,
                       uint32_t tier) {
    Record r{kBlockTokens, count, arena_.size()};
    for (uint32_t k = 0; k < count; ++k) {
      const uint32_t w = (first_worker + k) % kHeadlineWorkers;
      arena_.push_back(Placement{w, tier, (w & 1) != 0 ? 3u : 0u});
    }
    map_.emplace(hash, r);
  };
  for (const int64_t h : HeadlineHashes())
    add(h, 0, kHeadlineWorkers, kTierHbm);
  for (uint64_t b = 0; b < blocks; ++b) {
    add(FillerHash(b), static_cast<uint32_t>(b % kHeadlineWorkers),
        spec.placements_per_block, (b & 3) == 3 ? kTierDram : kTierHbm);
  }
}

uint64_t LookupFloor::Probe(const std::vector<int64_t>& hashes) const {
  uint64_t sum = 0;
  for (const int64_t h : hashes) {
    const auto it = map_.find(h);
    if (it == map_.end()) continue;
    const Record& r = it->second;
    sum += r.token_count;
    const Placement* p = arena_.data() + r.first;
    for (uint32_t i = 0; i < r.count; ++i) {
      sum += p[i].worker ^ (p[i].tier << 8) ^ (p[i].mask << 16);
    }
  }
  return sum;
}

}  // namespace kvindexer::bench
