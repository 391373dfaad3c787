// WorkerSequenceTable: the host's record of every worker it knows, with the
// sequence state of docs/contract.md, "Recovery > Per-worker state" (ready,
// epoch, checkpoint) and the address and cache spec last installed for it.
//
// This is the one place that state lives. Backends know nothing of it: they
// store placements and the address and spec the host passes with every
// batch. The host keeps address and spec here as well so that the batches it
// composes itself (a gap's clear, a scale-in) can pass them back unchanged.
//
// A record exists from the first seed-era apply or ConfigureExpectedWorkers
// that names the worker until it is removed: by a ConfigureExpectedWorkers
// that leaves it out, by an explicit removal, or by a liveness sweep when the
// worker registered itself (docs/contract.md, "Recovery > Worker liveness and
// removal").
//
// The table notes which ids may have changed (every id passed to
// FindToChange, FindOrAdd, Erase or Touch) until TakeChanged, so that the
// Indexer can publish exactly those to its WorkerDirectory
// (core/worker_directory.h). Reads (Find, Contains) note nothing, and
// neither does FindClaims: the claims are never published.
//
// Thread safety: none. The Indexer reads and writes the table only under its
// mutation mutex.
#ifndef KVINDEXER_CORE_WORKER_SEQUENCE_TABLE_H_
#define KVINDEXER_CORE_WORKER_SEQUENCE_TABLE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "common/clock.h"
#include "common/fidelity_header.h"
#include "core/placement_bound.h"
#include "core/stream_metadata.h"
#include "core/worker_claims.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// The last sequence number the index covers for one worker epoch.
struct SequenceCheckpoint {
  std::string epoch;
  uint64_t seq = 0;

  bool operator==(const SequenceCheckpoint&) const = default;
};

// The derived states of a record (docs/contract.md, "Recovery > Per-worker
// state").
enum class SequenceState {
  kSequenced,    // ready, with a checkpoint
  kInvalid,      // not ready, no checkpoint
  kUnsequenced,  // ready, no checkpoint: fed by seed-era applies only
};

struct WorkerRecord {
  // A ready worker's placement is complete as far as the server knows. A
  // worker that is not ready holds no placement (the Indexer keeps that
  // invariant).
  bool ready = false;
  // Epoch and checkpoint are set and cleared together.
  std::optional<SequenceCheckpoint> checkpoint;
  std::string address;
  std::optional<CacheSpec> spec;
  // Listed by a ConfigureExpectedWorkers since the record was created. A
  // liveness sweep keeps the record of such a worker (fleet membership is
  // the configurer's decision) and removes that of one that registered
  // itself.
  bool configured = false;
  // Recent claims on this worker id, to detect two bridges feeding it
  // (core/worker_claims.h); bounded, and deleted with the record.
  WorkerClaims claims;
  // For the operator only (docs/admin-api.md, "ListWorkers"); never read to
  // answer a query and never written to the data directory. The last live
  // mutation that took effect for the worker (apply, snapshot install,
  // configure, a gap's or a liveness sweep's clear), on the Indexer's clock;
  // nullopt when none has since this process started (replay and restore
  // do not set it).
  std::optional<MonotonicClock::TimePoint> last_apply;
  // What the worker's bridge last said in `kv-indexer-fidelity` on a
  // mutation that took effect; kept until the next one that carries it.
  Fidelity fidelity = Fidelity::kUnknown;
  std::string fidelity_reason;
  // A malformed fidelity value was logged for this record already.
  bool fidelity_malformed_logged = false;
  // The stream's namespace is not empty; fixed when the record is created
  // (the table keys records by the stream's backend id).
  bool namespaced = false;
  StreamMetadata meta;
  // Which record of its stream this is: set once when the record is
  // created, from a counter of the table's, so that a record removed and
  // created again has a different one (a staged snapshot's Commit refuses a
  // record replaced since its Begin). Never persisted.
  uint64_t incarnation = 0;
  // The placement bound evicted some of the stream's placements since they
  // were last wholly replaced or dropped (core/placement_bound.h): the index
  // under-reports the worker. Shown as fidelity degraded, reason
  // "evicted"; like any degraded feed it stays covered. Kept in
  // checkpoints.
  bool evicted = false;
  // Placements the bound has evicted from this record, by EvictionReason
  // (index = its value; [0] unused), for the operator; never persisted.
  std::array<uint64_t, kMaxEvictionReason + 1> evicted_placements{};

  // Whether the index covers the stream (docs/contract.md, "Streams >
  // Coverage"): ready and, for a namespaced stream, with an epoch and a
  // generation. A legacy stream is covered whenever it is ready.
  bool covered() const {
    return ready && (!namespaced ||
                     (checkpoint.has_value() && !meta.generation.empty()));
  }

  SequenceState state() const {
    if (checkpoint.has_value()) return SequenceState::kSequenced;
    return ready ? SequenceState::kUnsequenced : SequenceState::kInvalid;
  }
};

class WorkerSequenceTable {
 public:
  // Null when `worker_id` has no record. The pointer stays valid until the
  // record is erased. Notes nothing.
  const WorkerRecord* Find(std::string_view worker_id) const;
  bool Contains(std::string_view worker_id) const {
    return Find(worker_id) != nullptr;
  }
  // As Find, for a caller that changes the record through the pointer:
  // notes `worker_id` as changed when it has a record.
  WorkerRecord* FindToChange(std::string_view worker_id);
  // The claims on `worker_id`'s record; null when it has none. Notes
  // nothing. The pointer stays valid until the record is erased.
  WorkerClaims* FindClaims(std::string_view worker_id);
  // The record of `worker_id`, created as a fresh one (not ready, no
  // checkpoint, empty address, no spec, the next incarnation) when absent;
  // *created says which.
  WorkerRecord& FindOrAdd(std::string_view worker_id, bool* created = nullptr);
  // Returns false when there was no record.
  bool Erase(std::string_view worker_id);
  // Notes `worker_id` as changed: something the operator sees of it that
  // the table does not hold (its heartbeat marker) changed.
  void Touch(std::string_view worker_id);
  // The ids noted since the last call, sorted, each once; the ids of
  // erased records are among them.
  std::vector<std::string> TakeChanged();
  // The ids noted since the last TakeChanged, in the order noted, with
  // repeats; TakeChanged empties it.
  const std::vector<std::string>& changed() const { return changed_; }

  size_t size() const { return records_.size(); }
  size_t ready_count() const;
  // Records whose stream is covered (WorkerRecord::covered).
  size_t covered_count() const;
  // Every worker id with a record, in no particular order.
  std::vector<std::string> WorkerIds() const;

 private:
  absl::node_hash_map<std::string, WorkerRecord> records_;
  // Consecutive repeats of one id are noted once.
  std::vector<std::string> changed_;
  // The incarnation of the last record created.
  uint64_t last_incarnation_ = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_WORKER_SEQUENCE_TABLE_H_
