// The answer a replica of the fleet event log gives to a mutation RPC
// (docs/fleet.md, "Replicas follow the log"). With
// KV_INDEXER_EVENT_SOURCE=jetstream the server's index changes only through
// the log's records (replica/log_follower.h), so that every replica holds
// the same contents; a write sent to one replica would make it differ from
// the others. ApplyExternalKvBatch, ReplaceExternalKvSnapshot,
// ConfigureExpectedWorkers and the admin RemoveWorker therefore answer
// FAILED_PRECONDITION, after the write-token check (which stays first:
// a peer without the token learns nothing about the server's mode), except
// the line-A writes a replica writes through to the log
// (replica/write_through.h).
#ifndef KVINDEXER_REPLICA_REPLICA_REFUSAL_H_
#define KVINDEXER_REPLICA_REPLICA_REFUSAL_H_

#include <string_view>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace kvindexer::replica {

// FAILED_PRECONDITION naming `method` and KV_INDEXER_EVENT_SOURCE.
grpc::Status ReplicaRefusal(std::string_view method);
// The same answer as an absl::Status, for the write-through
// (replica/write_through.h), which refuses what it does not write through.
absl::Status ReplicaRefusalStatus(std::string_view method);

}  // namespace kvindexer::replica

#endif  // KVINDEXER_REPLICA_REPLICA_REFUSAL_H_
