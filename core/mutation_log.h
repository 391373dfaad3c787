// MutationLog: where the Indexer writes every mutation that takes effect
// before applying it (docs/durability.md, "Write-ahead log"). The Indexer
// appends under its mutation mutex, in the single-writer order, and waits
// for durability after releasing it, so that concurrent writers can share
// one sync (group commit).
//
// Offsets are logical: bytes appended since the log was opened, across file
// rotations; they only grow, except that Retract takes back the last record.
#ifndef KVINDEXER_CORE_MUTATION_LOG_H_
#define KVINDEXER_CORE_MUTATION_LOG_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kv_indexer_state.pb.h"

namespace kvindexer {

class MutationLog {
 public:
  virtual ~MutationLog() = default;

  // Appends `record` and returns the logical offset just past it. On a write
  // failure the log is cut back to where it was and UNAVAILABLE ("state log
  // write failed: ...") is returned: the caller must not apply the mutation.
  // REQUIRES: called by one thread at a time (the Indexer's mutation mutex).
  virtual absl::StatusOr<uint64_t> Append(
      const state::v1::WalRecord& record) = 0;
  // Takes back the record that the last Append returned `end` for: the
  // mutation did not take effect after all (the backend refused it).
  // REQUIRES: as Append; no Append since.
  virtual void Retract(uint64_t end) = 0;
  // The offset just past everything appended so far. REQUIRES: as Append.
  virtual uint64_t end() const = 0;
  // Returns when everything up to `offset` is as durable as the sync policy
  // makes it (stable storage for `always`; the OS for `none`). UNAVAILABLE
  // when the sync failed; from then on every Append fails too. Thread-safe;
  // must not be called with the mutation mutex held.
  virtual absl::Status WaitDurable(uint64_t offset) = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_MUTATION_LOG_H_
