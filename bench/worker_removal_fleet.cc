#include "worker_removal_fleet.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"
#include "core/backend_status.h"

namespace kvindexer::bench {
namespace {

constexpr size_t kBatchHashes = kMaxHashesPerRequest;
constexpr uint32_t kBlockTokens = 16;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Distinct hash families: (role, owner) picks a stream, `index` a block in it.
enum Role : uint64_t { kShared = 1, kGroup = 2, kPrivate = 3 };
int64_t FleetHash(Role role, uint64_t owner, uint64_t index) {
  return static_cast<int64_t>(
      SplitMix64(SplitMix64((uint64_t{role} << 48) ^ owner) + index));
}

// Tier of private block `index`: 6 in 8 at HBM, 1 at DRAM, 1 at SSD.
uint32_t PrivateTier(uint64_t index) {
  switch (index % 8) {
    case 3:
      return kTierDram;
    case 7:
      return kTierSsd;
    default:
      return kTierHbm;
  }
}

// Accumulates REPORT actions for one worker and applies them in batches of
// at most kBatchHashes hashes.
class BatchSender {
 public:
  BatchSender(IndexBackend* backend, std::string id, std::string address)
      : backend_(backend), id_(std::move(id)), address_(std::move(address)) {
    sizes_.assign(kBatchHashes, kBlockTokens);
  }

  absl::Status Add(uint32_t tier, int64_t hash) {
    by_tier_[tier].push_back(hash);
    if (++pending_ == kBatchHashes) return Flush();
    return absl::OkStatus();
  }

  absl::Status Flush() {
    ActionView actions[kMaxTier + 1];
    size_t count = 0;
    for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
      const std::vector<int64_t>& hashes = by_tier_[tier];
      if (hashes.empty()) continue;
      actions[count++] = ActionView{kActionReport,
                                    tier,
                                    {hashes.data(), hashes.size()},
                                    {nullptr, 0},
                                    {sizes_.data(), hashes.size()}};
    }
    ApplyBatchView batch{};
    batch.worker_id = StringView{id_.data(), id_.size()};
    batch.worker_address = StringView{address_.data(), address_.size()};
    batch.actions = actions;
    batch.action_count = count;
    const BackendStatus status = backend_->Apply(batch);
    for (std::vector<int64_t>& hashes : by_tier_) hashes.clear();
    pending_ = 0;
    if (status.code != BackendCode::kOk) {
      const absl::Status s = ToAbslStatus(status);
      return absl::Status(s.code(),
                          absl::StrCat("Apply for ", id_, ": ", s.message()));
    }
    return absl::OkStatus();
  }

 private:
  IndexBackend* backend_;
  std::string id_;
  std::string address_;
  std::vector<int64_t> by_tier_[kMaxTier + 1];
  std::vector<uint32_t> sizes_;
  size_t pending_ = 0;
};

class IgnoringVisitor final : public BlockVisitor {
 public:
  void OnWorker(const WorkerView&) noexcept override {}
  bool OnBlock(const BlockView&) noexcept override { return true; }
};

}  // namespace

absl::Status WorkerRemovalFleet::Check(const FleetShape& shape) {
  if (shape.workers == 0 || shape.groups == 0 ||
      shape.workers % shape.groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat("groups (", shape.groups,
                                                   ") must divide workers (",
                                                   shape.workers, ")"));
  }
  if (shape.remove > shape.workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot remove ", shape.remove, " of ", shape.workers, " workers"));
  }
  const uint64_t per_worker = shape.placements / shape.workers;
  if (per_worker <= uint64_t{shape.shared_blocks} + shape.group_blocks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "placements / workers (", per_worker,
        ") leaves no private blocks after the shared and group blocks (",
        shape.shared_blocks, " + ", shape.group_blocks, ")"));
  }
  return absl::OkStatus();
}

uint64_t WorkerRemovalFleet::private_blocks() const {
  return shape_.placements / shape_.workers - shape_.shared_blocks -
         shape_.group_blocks;
}

uint64_t WorkerRemovalFleet::placements_per_worker() const {
  return uint64_t{shape_.shared_blocks} + shape_.group_blocks +
         private_blocks();
}

std::vector<uint32_t> WorkerRemovalFleet::RemovalOrder() const {
  std::vector<uint32_t> order;
  for (uint32_t w = 0; w < shape_.workers; w += 2) order.push_back(w);
  for (uint32_t w = 1; w < shape_.workers; w += 2) order.push_back(w);
  order.resize(shape_.remove);
  return order;
}

std::string WorkerRemovalFleet::WorkerId(uint32_t slot, uint32_t generation) {
  return absl::StrCat("removal-bench-worker-", slot, "-gen", generation);
}

int64_t WorkerRemovalFleet::PrivateHash(uint32_t slot, uint32_t generation,
                                        uint64_t index) {
  return FleetHash(kPrivate, (uint64_t{generation} << 32) | slot, index);
}

uint32_t WorkerRemovalFleet::GroupOf(uint32_t slot) const {
  return slot / (shape_.workers / shape_.groups);
}

std::vector<int64_t> WorkerRemovalFleet::SharedHashes() const {
  std::vector<int64_t> out(shape_.shared_blocks);
  for (uint32_t i = 0; i < shape_.shared_blocks; ++i) {
    out[i] = FleetHash(kShared, 0, i);
  }
  return out;
}

std::vector<int64_t> WorkerRemovalFleet::GroupHashes(uint32_t group) const {
  std::vector<int64_t> out(shape_.group_blocks);
  for (uint32_t i = 0; i < shape_.group_blocks; ++i) {
    out[i] = FleetHash(kGroup, group, i);
  }
  return out;
}

absl::Status WorkerRemovalFleet::Load(IndexBackend* backend, uint32_t slot,
                                      uint32_t generation) const {
  BatchSender sender(backend, WorkerId(slot, generation),
                     absl::StrCat("10.", generation, ".", slot / 256, ".",
                                  slot % 256, ":30000"));
  for (const int64_t hash : SharedHashes()) {
    if (absl::Status s = sender.Add(kTierHbm, hash); !s.ok()) return s;
  }
  for (const int64_t hash : GroupHashes(GroupOf(slot))) {
    if (absl::Status s = sender.Add(kTierHbm, hash); !s.ok()) return s;
  }
  const uint64_t n = private_blocks();
  for (uint64_t i = 0; i < n; ++i) {
    absl::Status s =
        sender.Add(PrivateTier(i), PrivateHash(slot, generation, i));
    if (!s.ok()) return s;
  }
  return sender.Flush();
}

absl::Status WorkerRemovalFleet::CountHits(
    IndexBackend* backend,
    const std::vector<std::pair<uint32_t, uint32_t>>& present) const {
  std::vector<int64_t> hashes = SharedHashes();
  std::set<uint32_t> groups;
  for (const auto& [slot, generation] : present) groups.insert(GroupOf(slot));
  for (const uint32_t group : groups) {
    const std::vector<int64_t> g = GroupHashes(group);
    hashes.insert(hashes.end(), g.begin(), g.end());
  }
  const uint64_t n = std::min<uint64_t>(shape_.hit_blocks, private_blocks());
  for (const auto& [slot, generation] : present) {
    for (uint64_t i = 0; i < n; ++i) {
      hashes.push_back(PrivateHash(slot, generation, i));
    }
  }
  IgnoringVisitor visitor;
  for (size_t at = 0; at < hashes.size(); at += kBatchHashes) {
    const size_t count = std::min(kBatchHashes, hashes.size() - at);
    const BackendStatus status =
        backend->Match(HashSpan{hashes.data() + at, count}, true, &visitor);
    if (status.code != BackendCode::kOk) {
      const absl::Status s = ToAbslStatus(status);
      return absl::Status(s.code(),
                          absl::StrCat("counting Match: ", s.message()));
    }
  }
  return absl::OkStatus();
}

ExpectedCounts WorkerRemovalFleet::Expected(
    const std::vector<uint32_t>& present_slots) const {
  ExpectedCounts out;
  out.workers = present_slots.size();
  out.placements = out.workers * placements_per_worker();
  std::set<uint32_t> groups;
  for (const uint32_t slot : present_slots) groups.insert(GroupOf(slot));
  out.blocks = (out.workers > 0 ? shape_.shared_blocks : 0) +
               groups.size() * uint64_t{shape_.group_blocks} +
               out.workers * private_blocks();
  return out;
}

}  // namespace kvindexer::bench
