#include "synthetic_fleet.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"

namespace kvindexer::bench {
namespace {

constexpr uint32_t kMaxBatchHashes = kMaxHashesPerRequest;
constexpr int kMaxActions = kMaxActionsPerBatch;
constexpr uint32_t kFullSwa = kComponentFull | kComponentSwa;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

SyntheticFleet::SyntheticFleet(const FleetConfig& config)
    : config_(config),
      rng_(config.seed),
      system_popularity_(std::max<uint32_t>(config.system_prompts, 1),
                         config.zipf_s),
      conversation_popularity_(std::max<uint32_t>(config.live_conversations, 1),
                               config.zipf_s) {
  salt_ = SplitMix64(config.seed);
  const uint32_t prompts = std::max<uint32_t>(config_.system_prompts, 1);
  std::uniform_int_distribution<uint32_t> len(config_.system_min_blocks,
                                              config_.system_max_blocks);
  for (uint32_t p = 0; p < prompts; ++p) {
    uint32_t n = len(rng_);
    if (p == 0) n = std::max(n, config_.anchor_blocks);
    std::vector<int64_t> chain;
    chain.reserve(n);
    int64_t parent = static_cast<int64_t>(p);
    for (uint32_t i = 0; i < n; ++i) {
      parent = NextHash(parent);
      chain.push_back(parent);
    }
    system_prompts_.push_back(std::move(chain));
  }
  conversations_.resize(std::max<uint32_t>(config_.live_conversations, 1));

  const uint64_t per_worker = std::max<uint64_t>(
      config_.placements_per_worker, uint64_t{config_.anchor_blocks} * 2 + 64);
  hbm_capacity_ =
      std::max<uint64_t>(static_cast<uint64_t>(static_cast<double>(per_worker) *
                                               config_.hbm_share),
                         uint64_t{config_.anchor_blocks} + 32);
  dram_capacity_ = per_worker > hbm_capacity_ ? per_worker - hbm_capacity_ : 0;

  workers_.resize(config_.workers);
  for (uint32_t w = 0; w < config_.workers; ++w) {
    Worker& worker = workers_[w];
    worker.id = absl::StrCat("bench-worker-", w);
    worker.address =
        absl::StrCat("http://10.0.", w / 250, ".", w % 250 + 1, ":30000");
    const double f = config_.swa_fraction;
    worker.swa =
        static_cast<uint64_t>((w + 1) * f) > static_cast<uint64_t>(w * f);
    StartBatch(w);
  }
}

int64_t SyntheticFleet::NextHash(int64_t parent) {
  return static_cast<int64_t>(
      SplitMix64(static_cast<uint64_t>(parent) ^ SplitMix64(++salt_)));
}

void SyntheticFleet::StartBatch(uint32_t w) {
  Worker& worker = workers_[w];
  worker.pending.Clear();
  worker.pending.set_worker_id(worker.id);
  worker.pending.set_worker_address(worker.address);
  worker.pending.set_seq(++worker.seq);
  if (worker.swa) {
    v1::WorkerCacheSpec* spec = worker.pending.mutable_cache_spec();
    spec->set_version(1);
    spec->set_components(kFullSwa);
    spec->set_swa_window_tokens(config_.swa_window_tokens);
    spec->set_full_tier_mask(kServableTierMask);
    spec->set_swa_tier_mask(kServableTierMask);
  }
  worker.pending_hashes = 0;
}

void SyntheticFleet::FlushWorker(uint32_t w, BatchSink* sink) {
  Worker& worker = workers_[w];
  if (worker.pending.actions_size() == 0) return;
  sink->OnBatch(w, std::move(worker.pending));
  StartBatch(w);
}

void SyntheticFleet::Flush(BatchSink* sink) {
  for (uint32_t w = 0; w < workers_.size(); ++w) FlushWorker(w, sink);
}

void SyntheticFleet::AddAction(uint32_t w, ActionType type, Tier tier,
                               int64_t hash, uint32_t batch_hashes,
                               BatchSink* sink) {
  Worker& worker = workers_[w];
  const uint32_t limit = batch_hashes == 0
                             ? kMaxBatchHashes
                             : std::min(batch_hashes, kMaxBatchHashes);
  if (worker.pending_hashes >= limit) FlushWorker(w, sink);
  v1::ApplyExternalKvBatchRequest& batch = worker.pending;
  v1::ExternalKvAction* action = nullptr;
  if (batch.actions_size() > 0) {
    v1::ExternalKvAction* last =
        batch.mutable_actions(batch.actions_size() - 1);
    if (static_cast<uint32_t>(last->type()) == ActionNumber(type) &&
        static_cast<uint32_t>(last->tier()) == TierNumber(tier)) {
      action = last;
    }
  }
  if (action == nullptr) {
    if (batch.actions_size() >= kMaxActions) FlushWorker(w, sink);
    action = worker.pending.add_actions();
    action->set_type(static_cast<v1::ExternalKvActionType>(ActionNumber(type)));
    action->set_tier(static_cast<v1::TierType>(TierNumber(tier)));
  }
  action->add_hashes(hash);
  if (type == ActionType::kReport) {
    if (worker.swa) action->add_component_masks(kFullSwa);
    action->add_block_sizes(config_.block_tokens);
  }
  ++worker.pending_hashes;
}

void SyntheticFleet::EmitAnchors(BatchSink* sink) {
  const std::vector<int64_t>& anchor = system_prompts_[0];
  for (uint32_t w = 0; w < workers_.size(); ++w) {
    Worker& worker = workers_[w];
    for (uint32_t i = 0; i < config_.anchor_blocks; ++i) {
      auto [it, inserted] = worker.holdings.try_emplace(anchor[i]);
      if (!inserted) continue;
      it->second.tier = Tier::kHbm;
      it->second.pinned = true;
      worker.hbm_clock.push_back(anchor[i]);
      ++worker.hbm_count;
      ++placements_;
      AddAction(w, ActionType::kReport, Tier::kHbm, anchor[i], 0, sink);
    }
    FlushWorker(w, sink);
  }
}

std::vector<int64_t> SyntheticFleet::AnchorQuery() const {
  return {system_prompts_[0].begin(),
          system_prompts_[0].begin() + config_.anchor_blocks};
}

void SyntheticFleet::StartConversation(Conversation* conv) {
  conv->worker = std::uniform_int_distribution<uint32_t>(
      0, static_cast<uint32_t>(workers_.size()) - 1)(rng_);
  conv->hashes = system_prompts_[system_popularity_.Sample(rng_)];
}

void SyntheticFleet::ExtendConversation(Conversation* conv) {
  const uint32_t turn = std::uniform_int_distribution<uint32_t>(
      config_.turn_min_blocks, config_.turn_max_blocks)(rng_);
  for (uint32_t i = 0;
       i < turn && conv->hashes.size() < config_.max_prompt_blocks; ++i) {
    conv->hashes.push_back(NextHash(conv->hashes.back()));
  }
}

// Caches evict in bulk between watermarks: once over capacity, down to
// capacity minus 1/64 of it. Victims of one round go out as one REVOKE run
// (and, for HBM, one REPORT run at DRAM), as a bridge would batch them.
uint64_t SyntheticFleet::LowWatermark(uint64_t capacity) {
  return capacity - capacity / 64;
}

void SyntheticFleet::EvictDram(uint32_t w, uint32_t batch_hashes,
                               BatchSink* sink) {
  Worker& worker = workers_[w];
  if (worker.dram_count <= dram_capacity_) return;
  std::vector<int64_t> victims;
  while (worker.dram_count > LowWatermark(dram_capacity_) &&
         !worker.dram_clock.empty()) {
    const int64_t h = worker.dram_clock.front();
    worker.dram_clock.pop_front();
    auto it = worker.holdings.find(h);
    if (it == worker.holdings.end() || it->second.tier != Tier::kDram) continue;
    if (it->second.referenced) {
      it->second.referenced = false;
      worker.dram_clock.push_back(h);
      continue;
    }
    worker.holdings.erase(it);
    --worker.dram_count;
    --placements_;
    victims.push_back(h);
  }
  for (const int64_t h : victims) {
    AddAction(w, ActionType::kRevoke, Tier::kDram, h, batch_hashes, sink);
  }
}

void SyntheticFleet::EvictHbm(uint32_t w, uint32_t batch_hashes,
                              BatchSink* sink) {
  Worker& worker = workers_[w];
  if (worker.hbm_count <= hbm_capacity_) return;
  std::vector<int64_t> victims;
  while (worker.hbm_count > LowWatermark(hbm_capacity_) &&
         !worker.hbm_clock.empty()) {
    const int64_t h = worker.hbm_clock.front();
    worker.hbm_clock.pop_front();
    auto it = worker.holdings.find(h);
    if (it == worker.holdings.end() || it->second.tier != Tier::kHbm) continue;
    if (it->second.pinned || it->second.referenced) {
      it->second.referenced = false;
      worker.hbm_clock.push_back(h);
      continue;
    }
    --worker.hbm_count;
    victims.push_back(h);
    if (dram_capacity_ == 0) {
      worker.holdings.erase(it);
      --placements_;
      continue;
    }
    it->second.tier = Tier::kDram;
    worker.dram_clock.push_back(h);
    ++worker.dram_count;
  }
  for (const int64_t h : victims) {
    AddAction(w, ActionType::kRevoke, Tier::kHbm, h, batch_hashes, sink);
  }
  if (dram_capacity_ == 0) return;
  for (const int64_t h : victims) {
    AddAction(w, ActionType::kReport, Tier::kDram, h, batch_hashes, sink);
  }
  EvictDram(w, batch_hashes, sink);
}

void SyntheticFleet::CacheOnWorker(uint32_t w,
                                   const std::vector<int64_t>& prompt,
                                   uint32_t batch_hashes, BatchSink* sink) {
  Worker& worker = workers_[w];
  for (const int64_t h : prompt) {
    auto [it, inserted] = worker.holdings.try_emplace(h);
    if (!inserted) {
      it->second.referenced = true;
      continue;
    }
    it->second.tier = Tier::kHbm;
    worker.hbm_clock.push_back(h);
    ++worker.hbm_count;
    ++placements_;
    AddAction(w, ActionType::kReport, Tier::kHbm, h, batch_hashes, sink);
  }
  EvictHbm(w, batch_hashes, sink);
}

void SyntheticFleet::Step(uint32_t batch_hashes, BatchSink* sink) {
  Conversation& conv = conversations_[conversation_popularity_.Sample(rng_)];
  const bool restart =
      std::bernoulli_distribution(config_.restart_probability)(rng_);
  if (conv.hashes.empty() || restart ||
      conv.hashes.size() >= config_.max_prompt_blocks) {
    StartConversation(&conv);
  }
  ExtendConversation(&conv);
  CacheOnWorker(conv.worker, conv.hashes, batch_hashes, sink);
  if (batch_hashes == 0) FlushWorker(conv.worker, sink);
}

std::vector<int64_t> SyntheticFleet::SampleQuery(uint32_t min_blocks,
                                                 uint32_t max_blocks) {
  const Conversation& conv =
      conversations_[conversation_popularity_.Sample(rng_)];
  std::vector<int64_t> q =
      conv.hashes.empty() ? system_prompts_[system_popularity_.Sample(rng_)]
                          : conv.hashes;
  const uint32_t turn = std::uniform_int_distribution<uint32_t>(
      config_.turn_min_blocks, config_.turn_max_blocks)(rng_);
  for (uint32_t i = 0; i < turn || q.size() < min_blocks; ++i) {
    q.push_back(NextHash(q.back()));
  }
  if (q.size() > max_blocks) q.resize(max_blocks);
  return q;
}

}  // namespace kvindexer::bench
