#include "tests/support/reference_model.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"
#include "tests/support/requests.h"

namespace kvindexer::test_support {
namespace {

constexpr size_t kMaxHashes = kMaxHashesPerRequest;
constexpr int kMaxActions = kMaxActionsPerBatch;

// Repeated hashes collapsed, first occurrence kept, order preserved.
std::vector<int64_t> FirstOccurrences(
    const google::protobuf::RepeatedField<int64_t>& hashes) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t h : hashes) {
    if (seen.insert(h).second) out.push_back(h);
  }
  return out;
}

absl::Status CheckBoundedHashes(int size) {
  if (size == 0) return absl::InvalidArgumentError("hashes must not be empty");
  if (static_cast<size_t>(size) > kMaxHashes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "request contains ", size, " hashes; maximum is ", kMaxHashes));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t ReferenceModel::placement_count() const {
  uint64_t n = 0;
  for (const auto& [hash, block] : blocks_) n += block.placements.size();
  return n;
}

absl::Status ReferenceModel::Validate(
    const v1::ApplyExternalKvBatchRequest& req) {
  if (req.worker_id().empty()) {
    return absl::InvalidArgumentError("worker_id must not be empty");
  }
  if (req.actions_size() > kMaxActions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("batch contains ", req.actions_size(),
                     " actions; maximum is ", kMaxActions));
  }
  size_t total = 0;
  for (const auto& a : req.actions()) total += a.hashes_size();
  if (total > kMaxHashes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "batch contains ", total, " hashes; maximum is ", kMaxHashes));
  }
  for (const auto& a : req.actions()) {
    const int tier = static_cast<int>(a.tier());
    if (tier == 0) {
      return absl::InvalidArgumentError("tier must not be TIER_UNKNOWN");
    }
    if (tier < 1 || tier > 3) {
      return absl::InvalidArgumentError("tier is not supported");
    }
    const int type = static_cast<int>(a.type());
    if (type == 1 || type == 2) {
      if (a.hashes_size() == 0) {
        return absl::InvalidArgumentError("hashes must not be empty");
      }
    } else if (type != 3) {
      return absl::InvalidArgumentError("action type is not supported");
    }
    const int h = a.hashes_size();
    if (a.component_masks_size() != 0 && a.component_masks_size() != h) {
      return absl::InvalidArgumentError(
          absl::StrCat("component_masks has ", a.component_masks_size(),
                       " entries but must be empty or match ", h, " hashes"));
    }
    if (a.block_sizes_size() != 0 && a.block_sizes_size() != h) {
      return absl::InvalidArgumentError(
          absl::StrCat("block_sizes has ", a.block_sizes_size(),
                       " entries but must be empty or match ", h, " hashes"));
    }
  }
  return absl::OkStatus();
}

ReferenceModel::Worker& ReferenceModel::Upsert(const std::string& id,
                                               std::string address,
                                               std::optional<CacheSpec> spec) {
  auto [it, inserted] = workers_.try_emplace(id);
  if (inserted) {
    std::set<uint32_t> taken;
    for (const auto& [other, worker] : workers_) {
      if (other != id) taken.insert(worker.ordinal);
    }
    uint32_t lowest = 0;
    while (taken.count(lowest) != 0) ++lowest;
    it->second.ordinal = lowest;
  }
  it->second.address = std::move(address);
  it->second.spec = spec;
  return it->second;
}

void ReferenceModel::Report(const std::string& worker, uint32_t tier,
                            int64_t hash, uint32_t mask, uint32_t size) {
  Block& b = blocks_[hash];
  b.placements[{worker, tier}] = mask;
  if (size > 0) b.token_count = size;
  workers_[worker].holdings[tier].insert(hash);
}

void ReferenceModel::Revoke(const std::string& worker, uint32_t tier,
                            int64_t hash) {
  Worker& w = workers_[worker];
  auto holding = w.holdings.find(tier);
  if (holding != w.holdings.end()) {
    holding->second.erase(hash);
    if (holding->second.empty()) w.holdings.erase(holding);
  }
  auto block = blocks_.find(hash);
  if (block == blocks_.end()) return;
  block->second.placements.erase({worker, tier});
  if (block->second.placements.empty()) {
    blocks_.erase(block);
    hits_.erase(hash);
  }
}

void ReferenceModel::Clear(const std::string& worker, uint32_t tier) {
  const auto it = workers_[worker].holdings.find(tier);
  if (it == workers_[worker].holdings.end()) return;
  const std::set<int64_t> copy = it->second;
  for (int64_t hash : copy) Revoke(worker, tier, hash);
}

bool ReferenceModel::RemoveWorker(const std::string& id) {
  const auto it = workers_.find(id);
  if (it == workers_.end()) return false;
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) Clear(id, tier);
  workers_.erase(id);
  return true;
}

absl::Status ReferenceModel::Apply(const v1::ApplyExternalKvBatchRequest& req) {
  if (absl::Status s = Validate(req); !s.ok()) return s;
  const std::string& id = req.worker_id();
  Upsert(id, req.worker_address(),
         req.has_cache_spec()
             ? std::optional<CacheSpec>(ToCacheSpec(req.cache_spec()))
             : std::nullopt);
  for (const auto& a : req.actions()) {
    const uint32_t tier = static_cast<uint32_t>(a.tier());
    switch (static_cast<int>(a.type())) {
      case 1: {  // REPORT: the last occurrence of each hash wins.
        std::map<int64_t, std::pair<uint32_t, uint32_t>> last;
        for (int i = 0; i < a.hashes_size(); ++i) {
          const uint32_t mask =
              a.component_masks_size() == 0 ? 0 : a.component_masks(i);
          const uint32_t size =
              a.block_sizes_size() == 0 ? 0 : a.block_sizes(i);
          last[a.hashes(i)] = {mask, size};
        }
        for (const auto& [hash, mask_size] : last) {
          Report(id, tier, hash, mask_size.first, mask_size.second);
        }
        break;
      }
      case 2:  // REVOKE
        for (int64_t hash : a.hashes()) Revoke(id, tier, hash);
        break;
      case 3:  // CLEAR_ALL_AT_TIER
        Clear(id, tier);
        break;
    }
  }
  return absl::OkStatus();
}

void ReferenceModel::Store(const ApplyBatchView& batch) {
  const std::string id(batch.worker_id.data, batch.worker_id.size);
  Upsert(id, std::string(batch.worker_address.data, batch.worker_address.size),
         batch.has_cache_spec != 0 ? std::optional<CacheSpec>(batch.cache_spec)
                                   : std::nullopt);
  for (size_t i = 0; i < batch.action_count; ++i) {
    const ActionView& a = batch.actions[i];
    for (size_t j = 0; j < a.hashes.size; ++j) {
      const int64_t hash = a.hashes.data[j];
      if (a.type == kActionReport) {
        Report(id, a.tier, hash,
               a.component_masks.size == 0 ? 0 : a.component_masks.data[j],
               a.block_sizes.size == 0 ? 0 : a.block_sizes.data[j]);
      } else if (a.type == kActionRevoke) {
        Revoke(id, a.tier, hash);
      }
    }
    if (a.type == kActionClearAllAtTier) Clear(id, a.tier);
  }
}

void ReferenceModel::CountHits(const std::vector<int64_t>& hashes) {
  for (int64_t hash : hashes) {
    if (blocks_.count(hash) == 0) continue;
    uint64_t& count = hits_[hash];
    if (count != std::numeric_limits<uint64_t>::max()) ++count;
  }
}

absl::Status ReferenceModel::Match(const v1::MatchExternalKvRequest& req,
                                   v1::MatchExternalKvResponse* resp) {
  resp->Clear();
  if (absl::Status s = CheckBoundedHashes(req.hashes_size()); !s.ok()) {
    return s;
  }
  struct Entry {
    int64_t hash;
    uint32_t mask;
    uint32_t size;
  };
  std::vector<std::string> order;
  std::map<std::string, std::map<uint32_t, std::vector<Entry>>> found;
  std::vector<int64_t> matched;
  for (int64_t hash : FirstOccurrences(req.hashes())) {
    const auto block = blocks_.find(hash);
    if (block == blocks_.end() || block->second.placements.empty()) continue;
    matched.push_back(hash);
    for (const auto& [key, mask] : block->second.placements) {
      const auto& [worker, tier] = key;
      if (!found.count(worker)) order.push_back(worker);
      found[worker][tier].push_back({hash, mask, block->second.token_count});
    }
  }
  for (const std::string& worker : order) {
    v1::ExternalKvNodeMatch* m = resp->add_matches();
    m->set_worker_id(worker);
    m->set_address(workers_.at(worker).address);
    for (const auto& [tier, entries] : found[worker]) {
      v1::TierHashes* t = m->add_hashes_by_tier();
      t->set_tier(static_cast<v1::TierType>(tier));
      for (const Entry& e : entries) {
        t->add_hashes(e.hash);
        t->add_component_masks(e.mask);
        t->add_block_sizes(e.size);
      }
    }
  }
  if (req.count_as_hit()) CountHits(matched);
  return absl::OkStatus();
}

absl::Status ReferenceModel::HitCounts(
    const v1::GetExternalKvHitCountsRequest& req,
    v1::GetExternalKvHitCountsResponse* resp) const {
  resp->Clear();
  if (absl::Status s = CheckBoundedHashes(req.hashes_size()); !s.ok()) {
    return s;
  }
  for (int64_t hash : FirstOccurrences(req.hashes())) {
    const auto it = hits_.find(hash);
    if (it == hits_.end()) continue;
    v1::HitCountEntry* e = resp->add_entries();
    e->set_hash(hash);
    e->set_hit_count_total(it->second);
  }
  return absl::OkStatus();
}

uint32_t ReferenceModel::WorkerPrefix(
    const std::string& worker, const v1::MatchExternalKvPrefixRequest& req,
    uint32_t limit) const {
  // What this worker holds on each scanned block: (tier, mask) pairs.
  struct Seen {
    bool present = false;
    uint32_t tokens = 0;
    std::vector<std::pair<uint32_t, uint32_t>> tier_masks;
  };
  std::vector<Seen> seen(limit);
  for (uint32_t i = 0; i < limit; ++i) {
    const auto block = blocks_.find(req.hashes(static_cast<int>(i)));
    if (block == blocks_.end()) continue;
    for (const auto& [key, mask] : block->second.placements) {
      if (key.first != worker) continue;
      seen[i].present = true;
      seen[i].tokens = block->second.token_count;
      seen[i].tier_masks.push_back({key.second, mask});
    }
  }

  const Worker& w = workers_.at(worker);
  if (!w.spec.has_value()) {  // Legacy: fail closed on any component mask.
    for (const Seen& s : seen) {
      for (const auto& [tier, mask] : s.tier_masks) {
        if (mask != 0) return 0;
      }
    }
    uint32_t n = 0;
    while (n < limit && seen[n].present) ++n;
    return n;
  }

  const CacheSpec& spec = *w.spec;
  const bool has_swa = (spec.components & kComponentSwa) != 0;
  const bool has_mamba = (spec.components & kComponentMamba) != 0;
  if (spec.components == 0 || spec.version > 1 ||
      (has_swa && spec.swa_window_tokens == 0)) {
    return 0;  // Invalid spec.
  }
  const auto available = [&](uint32_t i, uint32_t component,
                             uint32_t tier_mask) {
    if (!seen[i].present) return false;
    for (const auto& [tier, mask] : seen[i].tier_masks) {
      const bool servable = tier == 1 || tier == 2;
      if ((mask & component) != 0 && servable &&
          ((tier_mask >> tier) & 1U) != 0) {
        return true;
      }
    }
    return false;
  };
  // Try every boundary from the longest down; the first that holds wins.
  for (uint32_t n = limit; n >= 1; --n) {
    bool full_ok = true;
    for (uint32_t i = 0; i < n && full_ok; ++i) {
      full_ok = available(i, kComponentFull, spec.full_tier_mask);
    }
    if (!full_ok) continue;
    const uint32_t last = n - 1;
    if (has_swa) {
      if (!available(last, kComponentSwa, spec.swa_tier_mask)) continue;
      bool unbroken_from_head = true;
      for (uint32_t i = 0; i < n; ++i) {
        if (!available(i, kComponentSwa, spec.swa_tier_mask)) {
          unbroken_from_head = false;
        }
      }
      if (!unbroken_from_head) {
        uint64_t run = 0;
        for (uint32_t i = last + 1; i-- > 0;) {
          if (!available(i, kComponentSwa, spec.swa_tier_mask)) break;
          run += seen[i].tokens;
        }
        if (run < spec.swa_window_tokens) continue;
      }
    }
    if (has_mamba && !available(last, kComponentMamba, spec.mamba_tier_mask)) {
      continue;
    }
    return n;
  }
  return 0;
}

absl::Status ReferenceModel::MatchPrefix(
    const v1::MatchExternalKvPrefixRequest& req,
    v1::MatchExternalKvPrefixResponse* resp) const {
  resp->Clear();
  if (req.hashes_size() == 0) {
    return absl::InvalidArgumentError("hashes must not be empty");
  }
  const uint32_t n = static_cast<uint32_t>(req.hashes_size());
  const uint32_t limit =
      req.max_blocks() == 0 ? n : std::min(n, req.max_blocks());
  const auto first = blocks_.find(req.hashes(0));
  if (first == blocks_.end() || first->second.placements.empty()) {
    resp->set_blocks_read(1);
    return absl::OkStatus();
  }
  std::set<std::string> candidates;
  for (const auto& [key, mask] : first->second.placements) {
    candidates.insert(key.first);
  }
  std::vector<std::pair<uint32_t, std::string>> results;
  for (const std::string& worker : candidates) {
    const uint32_t prefix = WorkerPrefix(worker, req, limit);
    if (prefix > 0 && !workers_.at(worker).address.empty()) {
      results.push_back({prefix, worker});
    }
  }
  std::stable_sort(results.begin(), results.end(),
                   [](const auto& a, const auto& b) {
                     return a.first > b.first;  // ties keep worker-id order
                   });
  for (const auto& [prefix, worker] : results) {
    v1::ExternalKvPrefixMatch* m = resp->add_matches();
    m->set_worker_address(workers_.at(worker).address);
    m->set_matched_prefix_blocks(prefix);
    m->set_worker_id(worker);
  }
  resp->set_best_prefix_blocks(results.empty() ? 0 : results.front().first);
  resp->set_blocks_read(limit);
  return absl::OkStatus();
}

}  // namespace kvindexer::test_support
