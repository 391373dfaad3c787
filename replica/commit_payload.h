// Staged snapshot commits too large for one fleet event log record
// (docs/fleet.md, "Staged commits larger than one record"). The writer
// stores the commit's placements in the snapshot store as a payload, in the
// parts snapshots use (SnapshotParts of TierPlacements chunks, in the
// commit's tier order), and then appends the commit record without them,
// naming the payload (LogRecord fields 9 to 11). A reader fetches the
// payload and applies the record as if it carried the placements itself:
// the same install, at the record's position.
#ifndef KVINDEXER_REPLICA_COMMIT_PAYLOAD_H_
#define KVINDEXER_REPLICA_COMMIT_PAYLOAD_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "fleet/snapshot_store.h"
#include "kvindexer_fleet.pb.h"

namespace kvindexer::replica {

// True for a snapshot_commit record in the payload form (payload_id set).
bool IsPayloadCommit(const ::kvindexer::fleet::v1::LogRecord& record);

// A payload id no other call of any process gives: "c-", `producer`
// reduced to [A-Za-z0-9_-], a counter of this process and the time.
std::string NewPayloadId(std::string_view producer);

// Stores the placements of `record`, a snapshot_commit in the inline form,
// as payload `id` of `store`, and answers the payload form of the record:
// the same fields with hashes_by_tier empty and payload_id, payload_parts
// and payload_placements set. Errors: INVALID_ARGUMENT for a record that is
// not an inline commit, a tier whose side arrays are neither full nor
// empty, or a store whose parts cannot hold one placement; the store's
// (parts already stored are then removed when the store allows it).
[[nodiscard]] absl::StatusOr<::kvindexer::fleet::v1::LogRecord>
StoreCommitPayload(fleet::SnapshotStore& store, std::string_view id,
                   const ::kvindexer::fleet::v1::LogRecord& record);

// The inline form of `record`, a commit in the payload form, with the
// placements fetched from `store`. NOT_FOUND when the payload is gone;
// DATA_LOSS when it does not match the record (its part or placement
// count, a part that does not parse or holds anything but placements);
// the store's other errors (UNAVAILABLE: try again).
[[nodiscard]] absl::StatusOr<::kvindexer::fleet::v1::LogRecord>
FetchCommitPayload(fleet::SnapshotStore& store,
                   const ::kvindexer::fleet::v1::LogRecord& record);

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_COMMIT_PAYLOAD_H_
