// CommitCaptureLog: the MutationLog (core/mutation_log.h) of a replica's
// Indexer. A replica keeps no write-ahead log (its state comes from the
// fleet event log and its snapshots), so every record is accepted and is
// durable at once; a replica's Indexer gets one all the same for the one
// record a write-through needs from it, the staged snapshot commit (WAL op
// 8). A Commit sent to a replica must install at its position in the event
// log, as on every other replica, not where the replica is when the call
// arrives: the write-through (replica/write_through.h) runs the Indexer's
// Commit inside a Capture, which takes the commit record the Indexer builds
// (after checks M1 to M5) and refuses it, so that nothing is installed and
// the transaction stays open; the write-through appends the record to the
// event log and the replica's reader installs it when it gets there.
//
// Thread safety: Append, Retract and end are called under the Indexer's
// mutation mutex; WaitDurable from any thread. A Capture belongs to the
// thread that opened it.
#ifndef KVINDEXER_REPLICA_COMMIT_CAPTURE_LOG_H_
#define KVINDEXER_REPLICA_COMMIT_CAPTURE_LOG_H_

#include <atomic>
#include <cstdint>
#include <optional>

#include "core/mutation_log.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer::replica {

class CommitCaptureLog final : public MutationLog {
 public:
  // While it lives, a staged commit this thread's Indexer calls append is
  // kept in `commit` and refused with UNAVAILABLE. Not nested.
  class Capture {
   public:
    Capture();
    ~Capture();
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;

    std::optional<state::v1::StagedSnapshotCommit> commit;
  };

  // A staged commit outside a Capture (which no replica call makes) is
  // refused too: it must not install out of log order.
  absl::StatusOr<uint64_t> Append(const state::v1::WalRecord& record) override;
  void Retract(uint64_t /*end*/) override {}
  uint64_t end() const override { return end_.load(std::memory_order_relaxed); }
  absl::Status WaitDurable(uint64_t /*offset*/) override {
    return absl::OkStatus();
  }

 private:
  std::atomic<uint64_t> end_{0};
};

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_COMMIT_CAPTURE_LOG_H_
