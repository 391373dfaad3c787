// A test double of kv-indexer-server for one bridge: a KvApplier that keeps
// one map of (hash, tier) -> component mask per worker and implements the
// sequence gate and ReplaceExternalKvSnapshot as docs/contract.md describes
// them (seed-era applies, gated applies G1-G5, Replace V4 and its install;
// a line-A request, one with stream_id, also needs a record that a
// Configure listed),
// with knobs for the faults the recovery engine must survive: failing calls,
// lost responses, a restart that loses everything, and a server without the
// recovery RPCs.
//
// Thread safety: not thread-safe; used from the engine's thread.
#ifndef KVINDEXER_BRIDGE_TESTS_FAKE_GATED_SERVER_H_
#define KVINDEXER_BRIDGE_TESTS_FAKE_GATED_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bridge/kv_applier.h"

namespace kvindexer::bridge::testing {

class FakeGatedServer : public KvApplier {
 public:
  enum class Call {
    kApply,
    kGatedApply,
    kProbe,
    kReplace,
    kBegin,
    kAppend,
    kCommit
  };
  enum class Fault {
    kNone,
    kFail,          // answer UNAVAILABLE without doing anything
    kLoseResponse,  // do it, then answer DEADLINE_EXCEEDED
    kQueueFull,     // answer RESOURCE_EXHAUSTED without doing anything, as
                    // a server whose apply queue is full does
    kRefuse,        // staged RPCs only: answer INVALID_ARGUMENT
  };

  absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override;
  // Apply() that also records the beat (see `beats`).
  absl::Status Heartbeat(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      uint32_t ttl_ms,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override;
  absl::Status Replace(
      const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) override;
  // The staged snapshot RPCs: Begin needs a worker record (keyed by the
  // stream's worker_id), Append stages up to the declared count, Commit
  // installs like Replace and stores the metadata's generation. UNIMPLEMENTED
  // unless `staged`.
  absl::Status BeginSnapshot(
      const kv_indexer::v1::BeginExternalKvSnapshotRequest& request,
      kv_indexer::v1::BeginExternalKvSnapshotResponse* response) override;
  absl::Status AppendSnapshot(
      const kv_indexer::v1::AppendExternalKvSnapshotRequest& request,
      kv_indexer::v1::AppendExternalKvSnapshotResponse* response) override;
  absl::Status CommitSnapshot(
      const kv_indexer::v1::CommitExternalKvSnapshotRequest& request,
      kv_indexer::v1::CommitExternalKvSnapshotResponse* response) override;
  absl::Status AbortSnapshot(
      const kv_indexer::v1::AbortExternalKvSnapshotRequest& request) override;
  // True when an OK Apply, Heartbeat, Replace or Commit answer since the
  // last call came while `evicted` was set, as the server's eviction header
  // says.
  bool TakeEvicted() override {
    return std::exchange(evicted_answered_, false);
  }

  // ConfigureExpectedWorkers as it reaches the server for this one stream
  // (a multi-stream bridge's process Configure lists it): creates the
  // worker's record, not ready, or updates its address, and marks it
  // configured. While `refuse_configures` > 0, answers INVALID_ARGUMENT,
  // changes nothing and counts down, as the server does while another entry
  // of the list breaks a rule (until that entry's stream is parked).
  absl::Status Configure(const std::string& worker_id,
                         const std::string& address);

  // Loses every worker record, as a restart without durable state does.
  void RestartEmpty() { workers_.clear(); }
  // Deletes one worker record with its placement, as a liveness sweep or a
  // scale-in may: its gated applies are then refused at G1.
  void RemoveWorker(const std::string& id) { workers_.erase(id); }

  // Knobs. `gated` false: a seed-era server (Replace is UNIMPLEMENTED, the
  // gate fields are ignored). `fail_next` / `lose_next` apply to the next
  // calls of any kind; `fault_hook`, when set, decides per call instead.
  bool gated = true;
  bool staged = true;
  std::string indexer_epoch = "epoch-1";  // in Begin answers
  int fail_next = 0;
  int lose_next = 0;
  std::function<Fault(Call)> fault_hook;
  // The placement bound, as the server shows it to a bridge: while
  // `evicted`, OK answers carry the eviction header. A Replace or a Commit
  // clears it, as a whole snapshot does, unless `evict_on_install` (a
  // snapshot past the bound is evicted as it installs).
  bool evicted = false;
  bool evict_on_install = false;
  int refuse_configures = 0;

  // Observations.
  struct Worker {
    bool ready = false;
    std::optional<std::string> epoch;
    std::optional<uint64_t> checkpoint;
    std::string address;
    std::map<std::pair<int64_t, int>, uint32_t> placement;  // (hash, tier)
    std::string worker_generation;                          // set by a Commit
    // Listed by a Configure since the record was created: what a line-A
    // gated apply, Replace or Begin needs besides the record.
    bool configured = false;
  };
  const Worker* worker(const std::string& id) const;
  // Hashes `id` holds at any tier (empty when it has no record).
  std::set<int64_t> Held(const std::string& id) const;
  std::set<std::pair<int64_t, int>> Placements(const std::string& id) const;

  std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest> applies;
  std::vector<kv_indexer::v1::ReplaceExternalKvSnapshotRequest> replaces;
  std::vector<kv_indexer::v1::BeginExternalKvSnapshotRequest> begins;
  std::vector<kv_indexer::v1::AppendExternalKvSnapshotRequest> appends;
  std::vector<std::string> commits;  // transaction ids, as received
  std::vector<std::string> aborts;   // transaction ids
  int configures = 0;                // Configure() calls, refused ones included
  int probes = 0;
  int gaps = 0;  // G4 outcomes
  // Every Heartbeat() call, in order (each also appears in `applies` unless
  // a fault dropped it, and counts in `probes` when shaped as a probe).
  struct Beat {
    kv_indexer::v1::ApplyExternalKvBatchRequest request;
    uint32_t ttl_ms = 0;
    absl::StatusCode answer = absl::StatusCode::kOk;
  };
  std::vector<Beat> beats;

 private:
  Fault NextFault(Call call);
  absl::Status ApplyNow(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response);
  static void ApplyActions(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      Worker* worker);

  std::map<std::string, Worker> workers_;
  struct Transaction {
    kv_indexer::v1::BeginExternalKvSnapshotRequest begin;
    std::vector<kv_indexer::v1::ExternalKvSnapshotPlacement> staged;
  };
  std::map<std::string, Transaction> transactions_;
  int next_transaction_ = 0;
  bool evicted_answered_ = false;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_FAKE_GATED_SERVER_H_
