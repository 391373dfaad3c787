// One round of snapshot writing (docs/fleet.md, "Snapshots"): the newest
// snapshot plus the log after it give a snapshot at the log's current end,
// which is stored; then only the newest `keep` snapshots are kept, and once
// there are `keep` of them the log is trimmed up to the oldest, and the
// payloads of large staged commits that no record after it names are
// removed (docs/fleet.md, "Staged commits larger than one record"). The replica
// holding the snapshot lease (replica/snapshot_lease.h) runs a round at each
// interval; nothing of the serving index is read.
#ifndef KVINDEXER_REPLICA_SNAPSHOT_WRITER_H_
#define KVINDEXER_REPLICA_SNAPSHOT_WRITER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/request_limits.h"
#include "fleet/event_log.h"
#include "fleet/snapshot_store.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::replica {

struct SnapshotRoundOptions {
  std::string writer;       // the replica's name, kept in the manifest
  RequestLimits limits;     // the replicas' own (see SnapshotImage)
  uint32_t keep = 2;        // snapshots kept (>= 1)
  bool trim_log = true;     // trim the log up to the oldest kept snapshot
  int64_t now_unix_ms = 0;  // the manifest's created_unix_ms
  // Records read from the log per call.
  size_t read_batch = 1024;
};

struct SnapshotRound {
  bool written = false;  // false: the log had nothing after the newest
  ::kvindexer::fleet::v1::SnapshotManifest manifest;  // the newest, if any
  uint64_t records_applied = 0;  // log records the round took in
  uint64_t snapshots_deleted = 0;
  // Snapshots never committed whose parts were removed
  // (fleet::SnapshotStore::RemoveAbandoned).
  uint64_t abandoned_removed = 0;
  // Payloads of large staged commits no kept record needs any more.
  uint64_t payloads_removed = 0;
  uint64_t trimmed_before = 0;  // the log's first position after the round
};

// Runs one round, built on the newest snapshot that loads whole: a newer
// one that does not add up (DATA_LOSS) is deleted on the way, as no replica
// could load it either. Errors: DATA_LOSS when the log no longer holds the
// records right after that snapshot (it was trimmed past it); CANCELLED when
// `stop` became true; the log's and the store's errors (UNAVAILABLE: try
// again at the next interval). A failed round leaves earlier snapshots and
// the log as they were.
[[nodiscard]] absl::StatusOr<SnapshotRound> WriteSnapshotRound(
    fleet::EventLog& log, fleet::SnapshotStore& store,
    const SnapshotRoundOptions& options, const std::atomic<bool>& stop);

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_SNAPSHOT_WRITER_H_
