#include "absl_rwlock_backend.h"

#include <stddef.h>

#include <exception>
#include <new>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "block_emitter.h"
#include "kvindexer/backend_kit.h"
#include "worker_removal.h"

namespace kvindexer::absl_rwlock {

using kit::ErrorStatus;
using kit::OkStatus;

AbslRwlockBackend::AbslRwlockBackend() noexcept
    : applier_(&blocks_, &workers_, &hits_) {}

BackendStatus AbslRwlockBackend::Apply(const ApplyBatchView& batch) noexcept {
  BackendStatus status = kit::CheckApplyBatch(batch);
  if (status.code != BackendCode::kOk) return status;
  // The new address is built before the lock so that the exclusive section
  // does not allocate for it; the applier swaps it in at commit.
  std::string address;
  try {
    address.assign(batch.worker_address.data, batch.worker_address.size);
  } catch (...) {
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory copying worker_address (%zu bytes)",
                       batch.worker_address.size);
  }
  {
    // The batch's cache misses are taken here, beside queries; the
    // exclusive section below then holds them off for less time.
    ReaderGuard shared(&mu_);
    applier_.Warm(batch);
  }
  WriterGuard lock(&mu_);
  return applier_.Apply(batch, address);
}

BackendStatus AbslRwlockBackend::Match(HashSpan hashes, bool count_as_hit,
                                       BlockVisitor* visitor) noexcept {
  BackendStatus status = kit::CheckVisit(hashes, visitor);
  if (status.code != BackendCode::kOk) return status;
  if (!count_as_hit) {
    ReaderGuard lock(&mu_);
    return Visit(hashes, visitor);
  }
  WriterGuard lock(&mu_);
  // Counting comes first and is all or nothing; the visit then reads the
  // same snapshot. Counting does not depend on whether the visitor stops
  // early: a hit belongs to the request, not to the callbacks.
  status = CountHits(hashes);
  if (status.code != BackendCode::kOk) return status;
  return Visit(hashes, visitor);
}

BackendStatus AbslRwlockBackend::PrefixScan(HashSpan hashes,
                                            BlockVisitor* visitor) noexcept {
  BackendStatus status = kit::CheckVisit(hashes, visitor);
  if (status.code != BackendCode::kOk) return status;
  ReaderGuard lock(&mu_);
  return Visit(hashes, visitor);
}

BackendStatus AbslRwlockBackend::HitCounts(HashSpan hashes,
                                           uint64_t* counts) noexcept {
  BackendStatus status = kit::CheckHitCounts(hashes, counts);
  if (status.code != BackendCode::kOk) return status;
  ReaderGuard lock(&mu_);
  for (size_t i = 0; i < hashes.size; ++i) {
    counts[i] = hits_.Get(hashes.data[i]);
  }
  return OkStatus();
}

void AbslRwlockBackend::GetStats(BackendStats* stats) noexcept {
  if (stats == nullptr) return;
  ReaderGuard lock(&mu_);
  const uint64_t memory = sizeof(*this) + blocks_.MemoryBytes() +
                          workers_.MemoryBytes() + hits_.MemoryBytes() +
                          applier_.MemoryBytes();
  kit::SetStat(stats, &BackendStats::blocks, blocks_.size());
  kit::SetStat(stats, &BackendStats::placements, blocks_.placements());
  kit::SetStat(stats, &BackendStats::workers, workers_.size());
  kit::SetStat(stats, &BackendStats::hit_counters, hits_.size());
  kit::SetStat(stats, &BackendStats::memory_bytes, memory);
}

BackendStatus AbslRwlockBackend::SetHitCountForTest(int64_t hash,
                                                    uint64_t count) noexcept {
  WriterGuard lock(&mu_);
  try {
    hits_.Set(hash, count);
  } catch (...) {
    return ErrorStatus(BackendCode::kResourceExhausted, "out of memory");
  }
  return OkStatus();
}

BackendStatus AbslRwlockBackend::Visit(HashSpan hashes,
                                       BlockVisitor* visitor) const noexcept {
  try {
    BlockEmitter emitter(workers_, visitor);
    for (size_t i = 0; i < hashes.size; ++i) {
      if (!emitter.Emit(i, blocks_.Find(hashes.data[i]))) break;
    }
  } catch (const std::bad_alloc&) {
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory while visiting blocks");
  } catch (...) {
    return ErrorStatus(BackendCode::kInternal,
                       "unexpected exception while visiting blocks");
  }
  return OkStatus();
}

BackendStatus AbslRwlockBackend::CountHits(HashSpan hashes) noexcept {
  size_t fresh = 0;
  for (size_t i = 0; i < hashes.size; ++i) {
    const int64_t hash = hashes.data[i];
    if (blocks_.Find(hash) != nullptr && !hits_.Contains(hash)) ++fresh;
  }
  if (fresh != 0) {
    try {
      hits_.Reserve(fresh);
    } catch (...) {
      return ErrorStatus(BackendCode::kResourceExhausted,
                         "out of memory making room for %zu hit counters",
                         fresh);
    }
  }
  // Room for every new counter is reserved: no insertion below allocates,
  // so this loop cannot throw.
  try {
    for (size_t i = 0; i < hashes.size; ++i) {
      const int64_t hash = hashes.data[i];
      if (blocks_.Find(hash) != nullptr) hits_.Increment(hash);
    }
  } catch (...) {
    return ErrorStatus(BackendCode::kInternal,
                       "hit counting allocated despite its reservation");
  }
  return OkStatus();
}

BackendStatus AbslRwlockBackend::RemoveWorker(StringView worker_id,
                                              uint32_t* existed) noexcept {
  uint32_t removed = 0;
  BackendStatus status = kit::CheckRemoveWorker(worker_id);
  if (status.code == BackendCode::kOk) {
    WriterGuard lock(&mu_);
    status = RemoveWorkerFromTables(
        absl::string_view(worker_id.data, worker_id.size), &blocks_, &workers_,
        &hits_, &removed);
  }
  if (existed != nullptr) *existed = removed;
  return status;
}

BackendStatus AbslRwlockBackend::CountPlacements(StringView worker_id,
                                                 uint64_t* counts_by_tier,
                                                 uint32_t* existed) noexcept {
  if (existed != nullptr) *existed = 0;
  if (BackendStatus s = kit::CheckCountPlacements(worker_id, counts_by_tier);
      s.code != BackendCode::kOk) {
    return s;
  }
  for (uint32_t tier = 0; tier <= kMaxTier; ++tier) counts_by_tier[tier] = 0;
  ReaderGuard lock(&mu_);
  const std::optional<uint32_t> found =
      workers_.Find(absl::string_view(worker_id.data, worker_id.size));
  if (!found) return OkStatus();
  // The holdings mirror the blocks exactly (worker_registry.h).
  const WorkerRecord& record = workers_.at(*found);
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    counts_by_tier[tier] = record.Holdings(tier).size();
  }
  if (existed != nullptr) *existed = 1;
  return OkStatus();
}

BackendStatus AbslRwlockBackend::SetWriteMode(WriteMode mode) noexcept {
  if (mode != WriteMode::kServing && mode != WriteMode::kBulkLoad) {
    return ErrorStatus(BackendCode::kInvalidArgument, "unknown write mode %u",
                       static_cast<unsigned>(mode));
  }
  WriterGuard lock(&mu_);
  const bool bulk = mode == WriteMode::kBulkLoad;
  if (bulk == bulk_load_) return OkStatus();
  if (bulk && workers_.size() != 0) {
    return ErrorStatus(BackendCode::kFailedPrecondition,
                       "a bulk load starts only on a backend that holds no "
                       "worker; this one holds %llu",
                       static_cast<unsigned long long>(workers_.size()));
  }
  bulk_load_ = bulk;
  return OkStatus();
}

}  // namespace kvindexer::absl_rwlock
