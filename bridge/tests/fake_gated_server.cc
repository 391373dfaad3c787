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

// Line A (a request that carries stream_id) needs a record that a
// Configure listed; other requests need a record only.
template <typename Request>
bool Configured(const Request& request, const FakeGatedServer::Worker& worker) {
  return !request.has_stream_id() || worker.configured;
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

absl::Status FakeGatedServer::Configure(const std::string& worker_id,
                                        const std::string& address) {
  ++configures;
  if (refuse_configures > 0) {
    --refuse_configures;
    return absl::InvalidArgumentError("an entry of the list is refused");
  }
  Worker& worker = workers_[worker_id];
  worker.address = address;
  worker.configured = true;
  return absl::OkStatus();
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
  if (it == workers_.end() || !Configured(request, it->second)) {
    return absl::FailedPreconditionError(
        "stream must be configured before recovery-aware apply");
  }
  Worker& worker = it->second;
  // Line A's generation fence: a stream-keyed gated apply must carry the
  // stored generation.
  if (!worker.ready || !worker.epoch ||
      *worker.epoch != request.worker_epoch() ||
      (request.has_stream_id() &&
       worker.worker_generation != request.worker_generation())) {
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
  if (status.ok()) {
    *response = answer;
    if (evicted) evicted_answered_ = true;
  }
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
  if (it == workers_.end() || !Configured(request, it->second)) {
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
  if (!request.worker_generation().empty()) {
    worker.worker_generation = request.worker_generation();
  }
  evicted = evict_on_install;
  if (fault == Fault::kLoseResponse) {
    return absl::DeadlineExceededError("injected lost response");
  }
  if (evicted) evicted_answered_ = true;
  response->set_applied_seq(request.applied_seq());
  return absl::OkStatus();
}

absl::Status FakeGatedServer::BeginSnapshot(
    const kv_indexer::v1::BeginExternalKvSnapshotRequest& request,
    kv_indexer::v1::BeginExternalKvSnapshotResponse* response) {
  if (!staged) return absl::UnimplementedError("unknown method");
  const Fault fault = NextFault(Call::kBegin);
  if (fault == Fault::kFail) return absl::UnavailableError("injected failure");
  if (fault == Fault::kQueueFull) {
    return absl::ResourceExhaustedError("injected staging full");
  }
  begins.push_back(request);
  if (!request.has_stream_id()) {
    return absl::InvalidArgumentError("stream_id is required");
  }
  auto it = workers_.find(request.stream_id().worker_id());
  if (it == workers_.end() || !it->second.configured) {
    return absl::FailedPreconditionError("stream is not configured");
  }
  const std::string id = absl::StrCat("tx", ++next_transaction_);
  transactions_[id] = Transaction{request, {}};
  response->set_transaction_id(id);
  response->set_indexer_epoch(indexer_epoch);
  return absl::OkStatus();
}

absl::Status FakeGatedServer::AppendSnapshot(
    const kv_indexer::v1::AppendExternalKvSnapshotRequest& request,
    kv_indexer::v1::AppendExternalKvSnapshotResponse* response) {
  const Fault fault = NextFault(Call::kAppend);
  if (fault == Fault::kFail) return absl::UnavailableError("injected failure");
  if (fault == Fault::kRefuse) {
    return absl::InvalidArgumentError("injected refusal");
  }
  if (fault == Fault::kQueueFull) {
    return absl::ResourceExhaustedError("injected staging full");
  }
  appends.push_back(request);
  auto it = transactions_.find(request.transaction_id());
  if (it == transactions_.end()) {
    return absl::NotFoundError("unknown transaction");
  }
  Transaction& tx = it->second;
  if (tx.staged.size() + static_cast<size_t>(request.placements_size()) >
      tx.begin.expected_placements()) {
    return absl::InvalidArgumentError("more placements than declared");
  }
  tx.staged.insert(tx.staged.end(), request.placements().begin(),
                   request.placements().end());
  response->set_staged_placements(tx.staged.size());
  return absl::OkStatus();
}

absl::Status FakeGatedServer::CommitSnapshot(
    const kv_indexer::v1::CommitExternalKvSnapshotRequest& request,
    kv_indexer::v1::CommitExternalKvSnapshotResponse* response) {
  const Fault fault = NextFault(Call::kCommit);
  if (fault == Fault::kFail) return absl::UnavailableError("injected failure");
  if (fault == Fault::kQueueFull) {
    return absl::ResourceExhaustedError("injected full apply queue");
  }
  commits.push_back(request.transaction_id());
  auto it = transactions_.find(request.transaction_id());
  if (it == transactions_.end()) {
    return absl::NotFoundError("unknown transaction");
  }
  const Transaction tx = std::move(it->second);
  transactions_.erase(it);
  if (tx.staged.size() != tx.begin.expected_placements()) {
    return absl::FailedPreconditionError("staged count differs");
  }
  auto worker_it = workers_.find(tx.begin.stream_id().worker_id());
  if (worker_it == workers_.end()) {
    return absl::FailedPreconditionError("stream was removed");
  }
  Worker& worker = worker_it->second;
  worker.placement.clear();
  for (const auto& placed : tx.staged) {
    worker.placement[{placed.block_hash(), placed.tier()}] =
        placed.component_mask();
  }
  worker.address = tx.begin.worker_address();
  worker.ready = true;
  worker.epoch = tx.begin.worker_epoch();
  worker.checkpoint = tx.begin.applied_seq();
  if (!tx.begin.metadata().worker_generation().empty()) {
    worker.worker_generation = tx.begin.metadata().worker_generation();
  }
  evicted = evict_on_install;
  if (fault == Fault::kLoseResponse) {
    return absl::DeadlineExceededError("injected lost response");
  }
  if (evicted) evicted_answered_ = true;
  response->set_applied_seq(tx.begin.applied_seq());
  return absl::OkStatus();
}

absl::Status FakeGatedServer::AbortSnapshot(
    const kv_indexer::v1::AbortExternalKvSnapshotRequest& request) {
  aborts.push_back(request.transaction_id());
  transactions_.erase(request.transaction_id());
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
