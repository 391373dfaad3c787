#include "core/match_assembler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/backend_status.h"
#include "core/hash_collapse.h"
#include "core/stream_key.h"

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

MatchAssembler::MatchAssembler(HashSpan hashes,
                               v1::MatchExternalKvResponse* resp,
                               WorkerSlotMap* slots)
    : hashes_(hashes),
      resp_(resp),
      worker_of_(slots != nullptr ? *slots : own_slots_) {
  worker_of_.Clear();
}

void MatchAssembler::OnWorker(const WorkerView& worker) noexcept {
  int32_t index = worker_of_.Find(worker.worker);
  if (index == WorkerSlotMap::kNone) {
    index = static_cast<int32_t>(workers_.size());
    workers_.emplace_back();
    worker_of_.Set(worker.worker, index);
  }
  Worker& record = workers_[static_cast<size_t>(index)];
  record.id.assign(worker.id.data, worker.id.size);
  record.address.assign(worker.address.data, worker.address.size);
}

bool MatchAssembler::OnBlock(const BlockView& block) noexcept {
  if (block.placement_count == 0) return true;  // not matched
  if (block.index >= hashes_.size) {
    if (error_.empty()) {
      error_ = absl::StrCat("backend reported block index ", block.index,
                            " for a match of ", hashes_.size, " hashes");
    }
    return false;
  }
  const int64_t hash = hashes_.data[block.index];
  for (size_t i = 0; i < block.placement_count; ++i) {
    const Placement& p = block.placements[i];
    const int32_t index = worker_of_.Find(p.worker);
    if (index < 0 || p.tier < kTierHbm || p.tier > kMaxTier) {
      if (error_.empty()) {
        error_ = index < 0 ? absl::StrCat("backend reported worker ", p.worker,
                                          " without announcing it")
                           : absl::StrCat("backend reported tier ", p.tier);
      }
      return false;
    }
    Worker& worker = workers_[static_cast<size_t>(index)];
    if (worker.match < 0) {
      worker.match = resp_->matches_size();
      v1::ExternalKvNodeMatch* match = resp_->add_matches();
      // A stream's match names its worker id, never its backend id.
      const std::string_view id = WorkerIdOf(worker.id);
      match->set_worker_id(id.data(), id.size());
      match->set_address(worker.address);
    }
    v1::ExternalKvNodeMatch* match = resp_->mutable_matches(worker.match);
    if (worker.tier_entry[p.tier] < 0) {
      worker.tier_entry[p.tier] =
          static_cast<int8_t>(match->hashes_by_tier_size());
      match->add_hashes_by_tier()->set_tier(static_cast<v1::TierType>(p.tier));
    }
    v1::TierHashes* tier =
        match->mutable_hashes_by_tier(worker.tier_entry[p.tier]);
    tier->add_hashes(hash);
    tier->add_component_masks(p.mask);
    tier->add_block_sizes(block.token_count);
  }
  return true;
}

absl::Status MatchAssembler::Finish() {
  if (!error_.empty()) return absl::InternalError(error_);
  for (v1::ExternalKvNodeMatch& match : *resp_->mutable_matches()) {
    auto* tiers = match.mutable_hashes_by_tier();
    // At most three entries: insertion sort by swapping element pointers.
    for (int i = 1; i < tiers->size(); ++i) {
      for (int j = i; j > 0 && tiers->Get(j - 1).tier() > tiers->Get(j).tier();
           --j) {
        tiers->SwapElements(j - 1, j);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RunMatch(IndexBackend* backend,
                      const v1::MatchExternalKvRequest& req,
                      v1::MatchExternalKvResponse* resp) {
  resp->Clear();
  std::vector<int64_t> buffer;
  const HashSpan hashes = CollapseKeepFirst(
      HashSpan{req.hashes().data(), static_cast<size_t>(req.hashes_size())},
      &buffer);
  // Reused by this thread's matches, like the prefix query's maps: its
  // storage stays as large as the largest ordinal met, and each match pays
  // only for the workers it meets. A visitor never starts another query.
  thread_local WorkerSlotMap slots;
  MatchAssembler assembler(hashes, resp, &slots);
  const BackendStatus status =
      backend->Match(hashes, req.count_as_hit(), &assembler);
  if (absl::Status s = ToAbslStatus(status); !s.ok()) {
    resp->Clear();
    return s;
  }
  return assembler.Finish();
}

}  // namespace kvindexer
