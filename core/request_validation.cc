#include "core/request_validation.h"

#include <stdint.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/unicode_blank.h"
#include "core/line_a.h"
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

// The worker id a (worker_id, stream_id) pair names.
const std::string& KeyWorkerId(const std::string& worker_id,
                               const v1::StreamId* stream_id) {
  return stream_id != nullptr && worker_id.empty() ? stream_id->worker_id()
                                                   : worker_id;
}

// K1 and K2.
absl::Status CheckStreamKeyNames(const std::string& worker_id,
                                 const v1::StreamId* stream_id, bool line_a) {
  if (stream_id != nullptr && !worker_id.empty() &&
      worker_id != stream_id->worker_id()) {
    return absl::InvalidArgumentError(
        "worker_id and stream_id.worker_id differ");
  }
  const std::string& id = KeyWorkerId(worker_id, stream_id);
  if (absl::Status s = ValidateWorkerId(id); !s.ok()) return s;
  if (line_a && IsUnicodeBlank(id)) {
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

// K4's other fields share the worker id's limit.
absl::Status ValidateNameBytes(std::string_view field, const std::string& value,
                               const RequestLimits& limits) {
  return ValidateFieldBytes(field, value, limits.max_worker_id_bytes,
                            kMaxWorkerIdBytesVar);
}

// K3 and K4's namespace; fills `key` (when not null) with the stream.
absl::Status CheckStreamKeyBytes(const std::string& worker_id,
                                 const v1::StreamId* stream_id,
                                 const RequestLimits& limits, StreamKey* key) {
  const std::string& id = KeyWorkerId(worker_id, stream_id);
  if (absl::Status s = ValidateWorkerIdBytes(id, limits); !s.ok()) return s;
  if (stream_id != nullptr) {
    if (absl::Status s =
            ValidateNameBytes("namespace", stream_id->namespace_(), limits);
        !s.ok()) {
      return s;
    }
  }
  if (key != nullptr) {
    *key = stream_id == nullptr
               ? StreamKey{"", id, 0}
               : StreamKey{stream_id->namespace_(), id, stream_id->dp_rank()};
  }
  return absl::OkStatus();
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

// The byte bounds every stream write checks after its key, in this order:
// generation, model (when the request has one), address, epoch.
struct WriteFields {
  const std::string& generation;
  const std::string* model = nullptr;
  const std::string& address;
  const std::string& epoch;
};

absl::Status ValidateWriteFields(const WriteFields& fields,
                                 const RequestLimits& limits) {
  if (absl::Status s =
          ValidateNameBytes("worker_generation", fields.generation, limits);
      !s.ok()) {
    return s;
  }
  if (fields.model != nullptr) {
    if (absl::Status s = ValidateNameBytes("model", *fields.model, limits);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ValidateWorkerAddressBytes(fields.address, limits);
      !s.ok()) {
    return s;
  }
  return ValidateWorkerEpochBytes(fields.epoch, limits);
}

// K1 to K4 for the stream one request or entry names: `stream_id` null
// when absent; `line_a` refuses blank worker ids as well as empty ones.
absl::Status ResolveStreamKey(const std::string& worker_id,
                              const v1::StreamId* stream_id, bool line_a,
                              const RequestLimits& limits, StreamKey* key) {
  if (absl::Status s = CheckStreamKeyNames(worker_id, stream_id, line_a);
      !s.ok()) {
    return s;
  }
  return CheckStreamKeyBytes(worker_id, stream_id, limits, key);
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
                           const RequestLimits& limits, StreamKey* key) {
  if (absl::Status s = ResolveStreamKey(
          req.worker_id(), req.has_stream_id() ? &req.stream_id() : nullptr,
          IsLineA(req), limits, key);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateWriteFields({.generation = req.worker_generation(),
                               .address = req.worker_address(),
                               .epoch = req.worker_epoch()},
                              limits);
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
                             const RequestLimits& limits, StreamKey* key) {
  if (absl::Status s = ResolveStreamKey(
          req.worker_id(), req.has_stream_id() ? &req.stream_id() : nullptr,
          IsLineA(req), limits, key);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateWriteFields({.generation = req.worker_generation(),
                               .address = req.worker_address(),
                               .epoch = req.worker_epoch()},
                              limits);
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
                               const RequestLimits& limits,
                               std::vector<StreamKey>* keys) {
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
  const auto stream_of = [](const v1::ExpectedWorker& worker) {
    return worker.has_stream_id() ? &worker.stream_id() : nullptr;
  };
  // The request is line A as a whole: a blank worker id is refused in every
  // entry of a request that any entry makes line A.
  const bool line_a = IsLineA(req);
  for (const v1::ExpectedWorker& worker : req.workers()) {
    if (absl::Status s =
            CheckStreamKeyNames(worker.worker_id(), stream_of(worker), line_a);
        !s.ok()) {
      return s;
    }
  }
  std::vector<StreamKey> resolved(workers);
  for (size_t i = 0; i < workers; ++i) {
    const v1::ExpectedWorker& worker = req.workers(static_cast<int>(i));
    if (absl::Status s = CheckStreamKeyBytes(
            worker.worker_id(), stream_of(worker), limits, &resolved[i]);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ValidateNameBytes("worker_generation",
                                           worker.worker_generation(), limits);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ValidateNameBytes("model", worker.model(), limits);
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
  absl::flat_hash_set<std::string> seen;
  seen.reserve(workers);
  for (const StreamKey& key : resolved) {
    if (seen.insert(EncodeStreamKey(key)).second) continue;
    return absl::InvalidArgumentError(
        key.legacy() ? absl::StrCat("duplicate worker_id ", key.worker_id)
                     : absl::StrCat("duplicate stream ", StreamKeyText(key)));
  }
  if (keys != nullptr) *keys = std::move(resolved);
  return absl::OkStatus();
}

absl::Status ValidateInvalidate(const v1::InvalidateWorkerRequest& req,
                                const RequestLimits& limits, StreamKey* key) {
  return ResolveStreamKey(req.worker_id(),
                          req.has_stream_id() ? &req.stream_id() : nullptr,
                          /*line_a=*/true, limits, key);
}

absl::Status ValidateBegin(const v1::BeginExternalKvSnapshotRequest& req,
                           const RequestLimits& limits, StreamKey* key) {
  if (!req.has_stream_id()) {
    return absl::InvalidArgumentError("stream_id must be set");
  }
  if (absl::Status s =
          ResolveStreamKey("", &req.stream_id(), /*line_a=*/true, limits, key);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateNameBytes("snapshot_id", req.snapshot_id(), limits);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateWriteFields({.generation = req.metadata().worker_generation(),
                               .model = &req.metadata().model(),
                               .address = req.worker_address(),
                               .epoch = req.worker_epoch()},
                              limits);
      !s.ok()) {
    return s;
  }
  if (!req.has_metadata()) {
    return absl::InvalidArgumentError("metadata must be set");
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
