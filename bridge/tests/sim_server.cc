#include "bridge/tests/sim_server.h"

#include "core/indexer.h"
#include "tests/support/model_backend.h"

namespace kvindexer::bridge::testing {
namespace {

using kv_indexer::v1::ApplyExternalKvBatchRequest;
using kv_indexer::v1::ApplyExternalKvBatchResponse;
using kv_indexer::v1::ReplaceExternalKvSnapshotRequest;
using kv_indexer::v1::ReplaceExternalKvSnapshotResponse;

// Runs `call` under the fault the hook picks for `kind`.
template <typename Response, typename Call>
absl::Status WithFault(
    const std::function<SimServer::Fault(SimServer::Call)>& hook,
    SimServer::Call kind, Response* response, Call call) {
  const SimServer::Fault fault = hook ? hook(kind) : SimServer::Fault::kNone;
  if (fault == SimServer::Fault::kFail) {
    return absl::UnavailableError("injected failure");
  }
  Response answer;
  absl::Status status = call(&answer);
  if (fault == SimServer::Fault::kLoseResponse) {
    return absl::DeadlineExceededError("injected lost response");
  }
  if (status.ok()) *response = answer;
  return status;
}

SimServer::Call KindOf(const ApplyExternalKvBatchRequest& request) {
  if (!request.enforce_sequence()) return SimServer::Call::kApply;
  return request.seq() == 0 && request.actions_size() == 0
             ? SimServer::Call::kProbe
             : SimServer::Call::kGatedApply;
}

class FakeSimServer final : public SimServer {
 public:
  absl::Status Apply(const ApplyExternalKvBatchRequest& request,
                     ApplyExternalKvBatchResponse* response) override {
    const Call kind = KindOf(request);
    const Fault fault = fault_hook ? fault_hook(kind) : Fault::kNone;
    return WithFault([fault](Call) { return fault; }, kind, response,
                     [&](ApplyExternalKvBatchResponse* r) {
                       absl::Status status = server_.Apply(request, r);
                       if (status.ok() && kind == Call::kGatedApply &&
                           !r->duplicate() && on_checkpoint) {
                         on_checkpoint(r->applied_seq(),
                                       fault != Fault::kLoseResponse);
                       }
                       return status;
                     });
  }
  absl::Status Heartbeat(const ApplyExternalKvBatchRequest& request, uint32_t,
                         ApplyExternalKvBatchResponse* response) override {
    return Apply(request, response);
  }
  absl::Status Replace(const ReplaceExternalKvSnapshotRequest& request,
                       ReplaceExternalKvSnapshotResponse* response) override {
    const Fault fault = fault_hook ? fault_hook(Call::kReplace) : Fault::kNone;
    return WithFault([fault](Call) { return fault; }, Call::kReplace, response,
                     [&](ReplaceExternalKvSnapshotResponse* r) {
                       absl::Status status = server_.Replace(request, r);
                       if (status.ok() && on_checkpoint) {
                         on_checkpoint(request.applied_seq(),
                                       fault != Fault::kLoseResponse);
                       }
                       return status;
                     });
  }
  void RestartEmpty() override { server_.RestartEmpty(); }
  std::set<std::pair<int64_t, int>> Placements(const std::string& worker,
                                               int64_t) override {
    return server_.Placements(worker);
  }

 private:
  FakeGatedServer server_;
};

class CoreSimServer final : public SimServer {
 public:
  CoreSimServer() { RestartEmpty(); }
  absl::Status Apply(const ApplyExternalKvBatchRequest& request,
                     ApplyExternalKvBatchResponse* response) override {
    return WithFault(fault_hook, KindOf(request), response,
                     [&](ApplyExternalKvBatchResponse* r) {
                       return indexer_->operations().Apply(request, r).Wait();
                     });
  }
  absl::Status Heartbeat(const ApplyExternalKvBatchRequest& request, uint32_t,
                         ApplyExternalKvBatchResponse* response) override {
    return Apply(request, response);
  }
  absl::Status Replace(const ReplaceExternalKvSnapshotRequest& request,
                       ReplaceExternalKvSnapshotResponse* response) override {
    return WithFault(fault_hook, Call::kReplace, response,
                     [&](ReplaceExternalKvSnapshotResponse* r) {
                       return indexer_->operations().Replace(request, r).Wait();
                     });
  }
  void RestartEmpty() override {
    indexer_.reset();
    backend_ = std::make_unique<test_support::ModelBackend>();
    indexer_ = std::make_unique<Indexer>(backend_.get());
  }
  std::set<std::pair<int64_t, int>> Placements(const std::string& worker,
                                               int64_t max_hash) override {
    std::set<std::pair<int64_t, int>> out;
    for (int64_t from = 1; from <= max_hash; from += 16'384) {
      kv_indexer::v1::MatchExternalKvRequest request;
      for (int64_t h = from; h <= max_hash && h < from + 16'384; ++h) {
        request.add_hashes(h);
      }
      kv_indexer::v1::MatchExternalKvResponse response;
      if (!indexer_->operations().Match(request, &response).ok()) continue;
      for (const auto& match : response.matches()) {
        if (match.worker_id() != worker) continue;
        for (const auto& entry : match.hashes_by_tier()) {
          for (int64_t h : entry.hashes()) out.insert({h, entry.tier()});
        }
      }
    }
    return out;
  }

 private:
  std::unique_ptr<test_support::ModelBackend> backend_;
  std::unique_ptr<Indexer> indexer_;
};

}  // namespace

std::unique_ptr<SimServer> MakeFakeSimServer() {
  return std::make_unique<FakeSimServer>();
}

std::unique_ptr<SimServer> MakeCoreSimServer() {
  return std::make_unique<CoreSimServer>();
}

}  // namespace kvindexer::bridge::testing
