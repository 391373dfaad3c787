#include "core/request_validation.h"

#include <stdint.h>

#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "kvindexer/backend.h"

namespace kvindexer {
namespace {

namespace v1 = ::kv_indexer::v1;

constexpr char kEmptyHashes[] = "hashes must not be empty";

absl::Status ValidateBoundedHashes(int count) {
  if (count == 0) return absl::InvalidArgumentError(kEmptyHashes);
  if (static_cast<size_t>(count) > kMaxHashesPerRequest) {
    return absl::ResourceExhaustedError(absl::StrCat("request contains ", count,
                                                     " hashes; maximum is ",
                                                     kMaxHashesPerRequest));
  }
  return absl::OkStatus();
}

absl::Status ValidateSideArray(const char* field, int entries, int hashes) {
  if (entries != 0 && entries != hashes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " has ", entries, " entries but must be empty or match ", hashes,
        " hashes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateWorkerId(const std::string& worker_id) {
  if (worker_id.empty()) {
    return absl::InvalidArgumentError("worker_id must not be empty");
  }
  return absl::OkStatus();
}

// "Limits > Bounds": a string field of at most `max` bytes; the message
// names the field, the limit and its variable.
absl::Status ValidateFieldBytes(std::string_view field,
                                const std::string& value, uint32_t max,
                                std::string_view variable) {
  if (value.size() <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("{} is {} bytes; maximum is {} ({})", field, value.size(),
                  max, variable));
}

absl::Status ValidateWorkerIdBytes(const std::string& worker_id,
                                   const RequestLimits& limits) {
  return ValidateFieldBytes("worker_id", worker_id, limits.max_worker_id_bytes,
                            kMaxWorkerIdBytesVar);
}

absl::Status ValidateWorkerAddressBytes(const std::string& address,
                                        const RequestLimits& limits) {
  return ValidateFieldBytes("worker_address", address,
                            limits.max_worker_address_bytes,
                            kMaxWorkerAddressBytesVar);
}

absl::Status ValidateWorkerEpochBytes(const std::string& epoch,
                                      const RequestLimits& limits) {
  return ValidateFieldBytes("worker_epoch", epoch,
                            limits.max_worker_epoch_bytes,
                            kMaxWorkerEpochBytesVar);
}

// REQUIRES: the batch holds at most kMaxHashesPerRequest hashes in all
// (ValidateApply checks that before any action), so no action exceeds it.
absl::Status ValidateAction(const v1::ExternalKvAction& action) {
  // 4a: the tier, by raw number.
  if (absl::Status s = ValidateTier(static_cast<int32_t>(action.tier()));
      !s.ok()) {
    return s;
  }
  // 4b: the type, and the hashes it requires.
  const int32_t type = static_cast<int32_t>(action.type());
  const int hashes = action.hashes_size();
  switch (type) {
    case kActionReport:
    case kActionRevoke:
      if (hashes == 0) return absl::InvalidArgumentError(kEmptyHashes);
      break;
    case kActionClearAllAtTier:
      break;
    default:
      return absl::InvalidArgumentError("action type is not supported");
  }
  // 4c: side arrays, for every action type.
  if (absl::Status s = ValidateSideArray("component_masks",
                                         action.component_masks_size(), hashes);
      !s.ok()) {
    return s;
  }
  return ValidateSideArray("block_sizes", action.block_sizes_size(), hashes);
}

}  // namespace

absl::Status ValidateTier(int32_t tier) {
  if (tier == 0) {
    return absl::InvalidArgumentError("tier must not be TIER_UNKNOWN");
  }
  if (tier < static_cast<int32_t>(kTierHbm) ||
      tier > static_cast<int32_t>(kMaxTier)) {
    return absl::InvalidArgumentError("tier is not supported");
  }
  return absl::OkStatus();
}

absl::Status ValidateApply(const v1::ApplyExternalKvBatchRequest& req,
                           const RequestLimits& limits) {
  if (absl::Status s = ValidateWorkerId(req.worker_id()); !s.ok()) return s;
  if (absl::Status s = ValidateWorkerIdBytes(req.worker_id(), limits);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateWorkerAddressBytes(req.worker_address(), limits);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateWorkerEpochBytes(req.worker_epoch(), limits);
      !s.ok()) {
    return s;
  }
  const size_t action_count = static_cast<size_t>(req.actions_size());
  if (action_count > kMaxActionsPerBatch) {
    return absl::ResourceExhaustedError(
        absl::StrCat("batch contains ", action_count, " actions; maximum is ",
                     kMaxActionsPerBatch));
  }
  size_t total_hashes = 0;
  for (const v1::ExternalKvAction& action : req.actions()) {
    total_hashes += static_cast<size_t>(action.hashes_size());
  }
  if (total_hashes > kMaxHashesPerRequest) {
    return absl::ResourceExhaustedError(
        absl::StrCat("batch contains ", total_hashes, " hashes; maximum is ",
                     kMaxHashesPerRequest));
  }
  for (const v1::ExternalKvAction& action : req.actions()) {
    if (absl::Status s = ValidateAction(action); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ValidateMatch(const v1::MatchExternalKvRequest& req) {
  return ValidateBoundedHashes(req.hashes_size());
}

absl::Status ValidateHitCounts(const v1::GetExternalKvHitCountsRequest& req) {
  return ValidateBoundedHashes(req.hashes_size());
}

absl::Status ValidateReplace(const v1::ReplaceExternalKvSnapshotRequest& req,
                             const RequestLimits& limits) {
  if (absl::Status s = ValidateWorkerId(req.worker_id()); !s.ok()) return s;
  if (absl::Status s = ValidateWorkerIdBytes(req.worker_id(), limits);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateWorkerAddressBytes(req.worker_address(), limits);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateWorkerEpochBytes(req.worker_epoch(), limits);
      !s.ok()) {
    return s;
  }
  for (const v1::TierHashes& entry : req.hashes_by_tier()) {
    if (absl::Status s = ValidateTier(static_cast<int32_t>(entry.tier()));
        !s.ok()) {
      return s;
    }
    const int hashes = entry.hashes_size();
    if (absl::Status s = ValidateSideArray(
            "component_masks", entry.component_masks_size(), hashes);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            ValidateSideArray("block_sizes", entry.block_sizes_size(), hashes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateConfigure(const v1::ConfigureExpectedWorkersRequest& req,
                               const RequestLimits& limits) {
  const size_t workers = static_cast<size_t>(req.workers_size());
  if (workers > kMaxExpectedWorkers) {
    return absl::ResourceExhaustedError(
        absl::StrCat("request contains ", workers, " workers; maximum is ",
                     kMaxExpectedWorkers));
  }
  // C1a: the listed workers are exactly the records afterwards.
  if (workers > limits.max_workers) {
    return absl::ResourceExhaustedError(
        fmt::format("request contains {} workers; maximum is {} ({})", workers,
                    limits.max_workers, kMaxWorkersVar));
  }
  for (const v1::ExpectedWorker& worker : req.workers()) {
    if (absl::Status s = ValidateWorkerId(worker.worker_id()); !s.ok()) {
      return s;
    }
  }
  for (const v1::ExpectedWorker& worker : req.workers()) {
    if (absl::Status s = ValidateWorkerIdBytes(worker.worker_id(), limits);
        !s.ok()) {
      return s;
    }
  }
  for (const v1::ExpectedWorker& worker : req.workers()) {
    if (absl::Status s =
            ValidateWorkerAddressBytes(worker.worker_address(), limits);
        !s.ok()) {
      return s;
    }
  }
  absl::flat_hash_set<absl::string_view> seen;
  seen.reserve(workers);
  for (const v1::ExpectedWorker& worker : req.workers()) {
    if (!seen.insert(worker.worker_id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("duplicate worker_id ", worker.worker_id()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNewWorkerCapacity(size_t live_workers,
                                    const RequestLimits& limits) {
  if (live_workers < limits.max_workers) return absl::OkStatus();
  return absl::ResourceExhaustedError(fmt::format(
      "cannot add a worker: the server holds {} workers; maximum is {} ({})",
      live_workers, limits.max_workers, kMaxWorkersVar));
}

absl::Status ValidatePrefix(const v1::MatchExternalKvPrefixRequest& req) {
  if (req.hashes_size() == 0) return absl::InvalidArgumentError(kEmptyHashes);
  return absl::OkStatus();
}

}  // namespace kvindexer
