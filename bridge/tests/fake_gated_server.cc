#include "bridge/tests/fake_gated_server.h"

#include "absl/strings/str_cat.h"

namespace kvindexer::bridge::testing {
namespace {

using kv_indexer::v1::ApplyExternalKvBatchRequest;
using kv_indexer::v1::ApplyExternalKvBatchResponse;

absl::Status Validate(const ApplyExternalKvBatchRequest& request) {
  if (request.worker_id().empty()) {
    return absl::InvalidArgumentError("worker_id must not be empty");
  }
  for (const auto& action : request.actions()) {
    if (action.tier() < 1 || action.tier() > 3) {
      return absl::InvalidArgumentError("tier is not supported");
    }
  }
  return absl::OkStatus();
}

}  // namespace

FakeGatedServer::Fault FakeGatedServer::NextFault(Call call) {
  if (fault_hook) return fault_hook(call);
  if (fail_next > 0) {
    --fail_next;
    return Fault::kFail;
  }
  if (lose_next > 0) {
    --lose_next;
    return Fault::kLoseResponse;
  }
  return Fault::kNone;
}

void FakeGatedServer::ApplyActions(const ApplyExternalKvBatchRequest& request,
                                   Worker* worker) {
  worker->address = request.worker_address();
  for (const auto& action : request.actions()) {
    const int tier = action.tier();
    switch (action.type()) {
      case kv_indexer::v1::ACTION_REPORT:
        for (int i = 0; i < action.hashes_size(); ++i) {
          worker->placement[{action.hashes(i), tier}] =
              action.component_masks_size() > 0 ? action.component_masks(i)
                                                : 0u;
        }
        break;
      case kv_indexer::v1::ACTION_REVOKE:
        for (int64_t hash : action.hashes()) {
          worker->placement.erase({hash, tier});
        }
        break;
      case kv_indexer::v1::ACTION_CLEAR_ALL_AT_TIER:
        std::erase_if(worker->placement,
                      [tier](const auto& e) { return e.first.second == tier; });
        break;
      default:
        break;
    }
  }
}

absl::Status FakeGatedServer::ApplyNow(
    const ApplyExternalKvBatchRequest& request,
    ApplyExternalKvBatchResponse* response) {
  if (absl::Status valid = Validate(request); !valid.ok()) return valid;
  if (!gated || !request.enforce_sequence()) {
    Worker& worker = workers_[request.worker_id()];
    ApplyActions(request, &worker);
    worker.ready = true;
    // A seed-era server answers with an empty response.
    if (gated) response->set_applied_seq(request.seq());
    return absl::OkStatus();
  }
  auto it = workers_.find(request.worker_id());
  if (it == workers_.end()) {
    return absl::FailedPreconditionError(
        "stream must be configured before recovery-aware apply");
  }
  Worker& worker = it->second;
  if (!worker.ready || !worker.epoch ||
      *worker.epoch != request.worker_epoch()) {
    return absl::FailedPreconditionError(
        "stream has no READY snapshot for this generation and epoch");
  }
  const uint64_t checkpoint = *worker.checkpoint;
  if (request.seq() <= checkpoint) {
    response->set_duplicate(true);
    response->set_applied_seq(checkpoint);
    return absl::OkStatus();
  }
  if (request.seq() != checkpoint + 1) {
    ++gaps;
    worker.placement.clear();
    worker.ready = false;
    worker.epoch.reset();
    worker.checkpoint.reset();
    return absl::FailedPreconditionError(
        absl::StrCat("event sequence gap: expected ", checkpoint + 1, ", got ",
                     request.seq()));
  }
  ApplyActions(request, &worker);
  worker.ready = true;
  worker.epoch = request.worker_epoch();
  worker.checkpoint = request.seq();
  response->set_applied_seq(request.seq());
  return absl::OkStatus();
}

absl::Status FakeGatedServer::Apply(const ApplyExternalKvBatchRequest& request,
                                    ApplyExternalKvBatchResponse* response) {
  const bool probe = request.enforce_sequence() && request.seq() == 0 &&
                     request.actions_size() == 0;
  if (probe) ++probes;
  const Fault fault = NextFault(probe                        ? Call::kProbe
                                : request.enforce_sequence() ? Call::kGatedApply
                                                             : Call::kApply);
  if (fault == Fault::kFail) return absl::UnavailableError("injected failure");
  if (fault == Fault::kQueueFull) {
    return absl::ResourceExhaustedError("injected full apply queue");
  }
  applies.push_back(request);
  ApplyExternalKvBatchResponse answer;
  absl::Status status = ApplyNow(request, &answer);
  if (fault == Fault::kLoseResponse) {
    return absl::DeadlineExceededError("injected lost response");
  }
  if (status.ok()) *response = answer;
  return status;
}

absl::Status FakeGatedServer::Heartbeat(
    const ApplyExternalKvBatchRequest& request, uint32_t ttl_ms,
    ApplyExternalKvBatchResponse* response) {
  absl::Status status = Apply(request, response);
  beats.push_back({request, ttl_ms, status.code()});
  return status;
}

absl::Status FakeGatedServer::Replace(
    const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
    kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) {
  if (!gated) return absl::UnimplementedError("unknown method");
  const Fault fault = NextFault(Call::kReplace);
  if (fault == Fault::kFail) return absl::UnavailableError("injected failure");
  if (fault == Fault::kQueueFull) {
    return absl::ResourceExhaustedError("injected full apply queue");
  }
  replaces.push_back(request);
  if (request.worker_id().empty()) {
    return absl::InvalidArgumentError("worker_id must not be empty");
  }
  auto it = workers_.find(request.worker_id());
  if (it == workers_.end()) {
    return absl::FailedPreconditionError(
        "stream must be configured before snapshot replacement");
  }
  Worker& worker = it->second;
  worker.placement.clear();
  for (const auto& entry : request.hashes_by_tier()) {
    for (int i = 0; i < entry.hashes_size(); ++i) {
      worker.placement[{entry.hashes(i), entry.tier()}] =
          entry.component_masks_size() > 0 ? entry.component_masks(i) : 0u;
    }
  }
  worker.address = request.worker_address();
  worker.ready = true;
  worker.epoch = request.worker_epoch();
  worker.checkpoint = request.applied_seq();
  if (fault == Fault::kLoseResponse) {
    return absl::DeadlineExceededError("injected lost response");
  }
  response->set_applied_seq(request.applied_seq());
  return absl::OkStatus();
}

const FakeGatedServer::Worker* FakeGatedServer::worker(
    const std::string& id) const {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

std::set<int64_t> FakeGatedServer::Held(const std::string& id) const {
  std::set<int64_t> held;
  if (const Worker* w = worker(id)) {
    for (const auto& [key, mask] : w->placement) held.insert(key.first);
  }
  return held;
}

std::set<std::pair<int64_t, int>> FakeGatedServer::Placements(
    const std::string& id) const {
  std::set<std::pair<int64_t, int>> out;
  if (const Worker* w = worker(id)) {
    for (const auto& [key, mask] : w->placement) out.insert(key);
  }
  return out;
}

}  // namespace kvindexer::bridge::testing
