#include "backend_scenario.h"

#include <malloc.h>
#include <time.h>

#include <chrono>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/wire_vocabulary.h"
#include "machine_info.h"

namespace kvindexer::bench {
namespace {

constexpr size_t kBatchHashes = kMaxHashesPerRequest;
constexpr uint32_t kFullSwa = kComponentFull | kComponentSwa;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool IsSwaWorker(uint32_t w) { return (w & 1) != 0; }

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

uint64_t FillerBlocks(const ScenarioSpec& spec) {
  const uint64_t headline = uint64_t{kHeadlineBlocks} * kHeadlineWorkers;
  const uint64_t filler =
      spec.placements > headline ? spec.placements - headline : 0;
  const uint64_t ppb = spec.placements_per_block;
  return (filler + ppb - 1) / ppb;
}

int64_t FillerHash(uint64_t block) {
  return static_cast<int64_t>(SplitMix64(block ^ 0x6b76696e64657872ULL));
}

std::vector<int64_t> HeadlineHashes() {
  std::vector<int64_t> out;
  for (uint32_t i = 0; i < kHeadlineBlocks; ++i) {
    out.push_back(static_cast<int64_t>(SplitMix64(~uint64_t{i})));
  }
  return out;
}

std::vector<int64_t> DistinctListHashes() {
  std::vector<int64_t> out;
  for (uint32_t i = 0; i < kHeadlineBlocks; ++i) {
    out.push_back(static_cast<int64_t>(SplitMix64(0x64697374ULL << 32 | i)));
  }
  return out;
}

v1::ApplyExternalKvBatchRequest WorkerBatch(uint32_t w) {
  v1::ApplyExternalKvBatchRequest batch;
  batch.set_worker_id(absl::StrCat("bench-worker-", w));
  batch.set_worker_address(absl::StrCat("http://10.0.0.", w + 1, ":30000"));
  if (IsSwaWorker(w)) {
    v1::WorkerCacheSpec* spec = batch.mutable_cache_spec();
    spec->set_version(1);
    spec->set_components(kFullSwa);
    spec->set_swa_window_tokens(1024);
    spec->set_full_tier_mask(kServableTierMask);
    spec->set_swa_tier_mask(kServableTierMask);
  }
  return batch;
}

void AddAction(uint32_t w, v1::ExternalKvActionType type, v1::TierType tier,
               const std::vector<int64_t>& hashes,
               v1::ApplyExternalKvBatchRequest* batch) {
  if (hashes.empty()) return;
  v1::ExternalKvAction* a = batch->add_actions();
  a->set_type(type);
  a->set_tier(tier);
  a->mutable_hashes()->Add(hashes.begin(), hashes.end());
  if (type == v1::ACTION_REPORT) {
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (IsSwaWorker(w)) a->add_component_masks(kFullSwa);
      a->add_block_sizes(kBlockTokens);
    }
  }
}

absl::StatusOr<std::unique_ptr<BackendScenario>> BackendScenario::Build(
    const ScenarioSpec& spec) {
  if (spec.placements_per_block < 1 ||
      spec.placements_per_block > kHeadlineWorkers) {
    return absl::InvalidArgumentError(
        absl::StrCat("placements_per_block=", spec.placements_per_block,
                     ": must be 1..", kHeadlineWorkers));
  }
  std::unique_ptr<BackendScenario> s(new BackendScenario);
  s->spec_ = spec;
  malloc_trim(0);
  const uint64_t rss0 = ReadRssBytes();
  absl::StatusOr<std::unique_ptr<LoadedBackend>> loaded = LoadedBackend::Load(
      spec.backend,
      ProcessEnvironment()("KV_INDEXER_BACKEND_PATH").value_or(""));
  if (!loaded.ok()) return loaded.status();
  s->loaded_ = std::move(*loaded);
  s->indexer_ =
      std::make_unique<Indexer>(s->loaded_->backend(), /*gate_log=*/nullptr,
                                RequestLimits{}, s->loaded_->abi_minor());

  v1::ApplyExternalKvBatchResponse applied;  // not read
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = ThreadCpuSeconds();
  const std::vector<int64_t> headline = HeadlineHashes();
  for (uint32_t w = 0; w < kHeadlineWorkers; ++w) {
    v1::ApplyExternalKvBatchRequest batch = WorkerBatch(w);
    AddAction(w, v1::ACTION_REPORT, v1::TIER_HBM, headline, &batch);
    if (absl::Status st =
            s->indexer_->operations().Apply(batch, &applied).Wait();
        !st.ok())
      return st;
  }
  const std::vector<int64_t> distinct = DistinctListHashes();
  for (uint32_t w = 0; w < kHeadlineWorkers; ++w) {
    std::vector<int64_t> even, odd;
    for (uint32_t b = 0; b < distinct.size(); ++b) {
      ((w + b) % 2 == 0 ? even : odd).push_back(distinct[b]);
    }
    v1::ApplyExternalKvBatchRequest batch = WorkerBatch(w);
    AddAction(w, v1::ACTION_REPORT, v1::TIER_HBM, even, &batch);
    AddAction(w, v1::ACTION_REPORT, v1::TIER_DRAM, odd, &batch);
    if (absl::Status st =
            s->indexer_->operations().Apply(batch, &applied).Wait();
        !st.ok())
      return st;
  }
  const uint64_t blocks = FillerBlocks(spec);
  std::vector<int64_t> hbm;
  std::vector<int64_t> dram;
  hbm.reserve(kBatchHashes);
  dram.reserve(kBatchHashes);
  for (uint32_t w = 0; w < kHeadlineWorkers; ++w) {
    const auto flush = [&]() -> absl::Status {
      v1::ApplyExternalKvBatchRequest batch = WorkerBatch(w);
      AddAction(w, v1::ACTION_REPORT, v1::TIER_HBM, hbm, &batch);
      AddAction(w, v1::ACTION_REPORT, v1::TIER_DRAM, dram, &batch);
      hbm.clear();
      dram.clear();
      return s->indexer_->operations().Apply(batch, &applied).Wait();
    };
    // Worker w holds block b when (w - b) mod 32 < placements_per_block.
    for (uint32_t k = 0; k < spec.placements_per_block; ++k) {
      for (uint64_t b = (w + kHeadlineWorkers - k) % kHeadlineWorkers;
           b < blocks; b += kHeadlineWorkers) {
        ((b & 3) == 3 ? dram : hbm).push_back(FillerHash(b));
        if (hbm.size() + dram.size() == kBatchHashes) {
          if (absl::Status st = flush(); !st.ok()) return st;
        }
      }
    }
    if (absl::Status st = flush(); !st.ok()) return st;
  }
  s->fill_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  s->fill_cpu_seconds_ = ThreadCpuSeconds() - cpu0;
  malloc_trim(0);
  const uint64_t rss1 = ReadRssBytes();
  s->rss_delta_bytes_ = rss1 > rss0 ? rss1 - rss0 : 0;
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  s->backend()->GetStats(&stats);
  s->placements_ = stats.placements;
  s->blocks_ = stats.blocks;
  s->stats_memory_bytes_ = stats.memory_bytes;
  return s;
}

}  // namespace kvindexer::bench
