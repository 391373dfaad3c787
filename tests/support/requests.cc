#include "tests/support/requests.h"

#include <string>
#include <type_traits>
#include <utility>

namespace kvindexer::test_support {
namespace {

template <typename T>
auto SpanOf(const google::protobuf::RepeatedField<T>& field) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return HashSpan{field.data(), static_cast<size_t>(field.size())};
  } else {
    return U32Span{field.data(), static_cast<size_t>(field.size())};
  }
}

StringView ViewOf(const std::string& s) {
  return StringView{s.data(), s.size()};
}

}  // namespace

Batch::Batch(std::string worker_id, std::string address) {
  req_.set_worker_id(std::move(worker_id));
  req_.set_worker_address(std::move(address));
}

Batch& Batch::Address(std::string address) {
  req_.set_worker_address(std::move(address));
  return *this;
}

Batch& Batch::Spec(const v1::WorkerCacheSpec& spec) {
  *req_.mutable_cache_spec() = spec;
  return *this;
}

Batch& Batch::Spec(const CacheSpec& spec) {
  return Spec(ToWorkerCacheSpec(spec));
}

Batch& Batch::Report(int tier, const Hashes& hashes, const Masks& masks,
                     const Masks& sizes) {
  return Action(kActionReport, tier, hashes, masks, sizes);
}

Batch& Batch::Revoke(int tier, const Hashes& hashes) {
  return Action(kActionRevoke, tier, hashes);
}

Batch& Batch::Seq(uint64_t seq) {
  req_.set_seq(seq);
  return *this;
}

Batch& Batch::Gated(std::string epoch, uint64_t seq) {
  req_.set_worker_epoch(std::move(epoch));
  req_.set_seq(seq);
  req_.set_enforce_sequence(true);
  return *this;
}

Batch& Batch::Clear(int tier, const Hashes& hashes) {
  return Action(kActionClearAllAtTier, tier, hashes);
}

Batch& Batch::Action(int type, int tier, const Hashes& hashes,
                     const Masks& masks, const Masks& sizes) {
  v1::ExternalKvAction* a = req_.add_actions();
  a->set_type(static_cast<v1::ExternalKvActionType>(type));
  a->set_tier(static_cast<v1::TierType>(tier));
  a->mutable_hashes()->Add(hashes.begin(), hashes.end());
  a->mutable_component_masks()->Add(masks.begin(), masks.end());
  a->mutable_block_sizes()->Add(sizes.begin(), sizes.end());
  return *this;
}

Snapshot::Snapshot(std::string worker_id, std::string address) {
  req_.set_worker_id(std::move(worker_id));
  req_.set_worker_address(std::move(address));
}

Snapshot& Snapshot::Epoch(std::string epoch) {
  req_.set_worker_epoch(std::move(epoch));
  return *this;
}

Snapshot& Snapshot::AppliedSeq(uint64_t seq) {
  req_.set_applied_seq(seq);
  return *this;
}

Snapshot& Snapshot::Spec(const v1::WorkerCacheSpec& spec) {
  *req_.mutable_cache_spec() = spec;
  return *this;
}

Snapshot& Snapshot::Tier(int tier, const Hashes& hashes, const Masks& masks,
                         const Masks& sizes) {
  v1::TierHashes* t = req_.add_hashes_by_tier();
  t->set_tier(static_cast<v1::TierType>(tier));
  t->mutable_hashes()->Add(hashes.begin(), hashes.end());
  t->mutable_component_masks()->Add(masks.begin(), masks.end());
  t->mutable_block_sizes()->Add(sizes.begin(), sizes.end());
  return *this;
}

ExpectedWorkers& ExpectedWorkers::Worker(std::string worker_id,
                                         std::string address) {
  v1::ExpectedWorker* w = req_.add_workers();
  w->set_worker_id(std::move(worker_id));
  w->set_worker_address(std::move(address));
  return *this;
}

ExpectedWorkers& ExpectedWorkers::Worker(std::string worker_id,
                                         std::string address,
                                         const v1::WorkerCacheSpec& spec) {
  Worker(std::move(worker_id), std::move(address));
  *req_.mutable_workers(req_.workers_size() - 1)->mutable_cache_spec() = spec;
  return *this;
}

BatchView::BatchView(const v1::ApplyExternalKvBatchRequest& req) {
  actions_.reserve(static_cast<size_t>(req.actions_size()));
  for (const v1::ExternalKvAction& a : req.actions()) {
    actions_.push_back(
        ActionView{static_cast<uint32_t>(a.type()),
                   static_cast<uint32_t>(a.tier()), SpanOf(a.hashes()),
                   SpanOf(a.component_masks()), SpanOf(a.block_sizes())});
  }
  view_.worker_id = ViewOf(req.worker_id());
  view_.worker_address = ViewOf(req.worker_address());
  view_.has_cache_spec = req.has_cache_spec() ? 1 : 0;
  view_.cache_spec = ToCacheSpec(req.cache_spec());
  view_.actions = actions_.data();
  view_.action_count = actions_.size();
}

v1::WorkerCacheSpec Spec(uint32_t components, uint32_t swa_window_tokens,
                         uint32_t full_tier_mask, uint32_t swa_tier_mask,
                         uint32_t mamba_tier_mask, uint32_t version) {
  v1::WorkerCacheSpec spec;
  spec.set_version(version);
  spec.set_components(components);
  spec.set_swa_window_tokens(swa_window_tokens);
  spec.set_full_tier_mask(full_tier_mask);
  spec.set_swa_tier_mask(swa_tier_mask);
  spec.set_mamba_tier_mask(mamba_tier_mask);
  return spec;
}

CacheSpec ToCacheSpec(const v1::WorkerCacheSpec& spec) {
  return CacheSpec{spec.version(),           spec.components(),
                   spec.swa_window_tokens(), spec.full_tier_mask(),
                   spec.swa_tier_mask(),     spec.mamba_tier_mask()};
}

v1::WorkerCacheSpec ToWorkerCacheSpec(const CacheSpec& spec) {
  return Spec(spec.components, spec.swa_window_tokens, spec.full_tier_mask,
              spec.swa_tier_mask, spec.mamba_tier_mask, spec.version);
}

v1::MatchExternalKvRequest MatchRequest(const Hashes& hashes,
                                        bool count_as_hit) {
  v1::MatchExternalKvRequest req;
  req.mutable_hashes()->Add(hashes.begin(), hashes.end());
  req.set_count_as_hit(count_as_hit);
  return req;
}

v1::MatchExternalKvPrefixRequest PrefixRequest(const Hashes& hashes,
                                               uint32_t max_blocks) {
  v1::MatchExternalKvPrefixRequest req;
  req.mutable_hashes()->Add(hashes.begin(), hashes.end());
  req.set_max_blocks(max_blocks);
  return req;
}

v1::GetExternalKvHitCountsRequest HitCountsRequest(const Hashes& hashes) {
  v1::GetExternalKvHitCountsRequest req;
  req.mutable_hashes()->Add(hashes.begin(), hashes.end());
  return req;
}

v1::StreamId StreamIdOf(std::string ns, std::string worker, uint32_t rank) {
  v1::StreamId id;
  id.set_namespace_(std::move(ns));
  id.set_worker_id(std::move(worker));
  id.set_dp_rank(rank);
  return id;
}

Hashes Range(int64_t first, int64_t n) {
  Hashes out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(first + i);
  return out;
}

}  // namespace kvindexer::test_support
