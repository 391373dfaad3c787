// RunReplica: kv-indexer-server as a replica of the fleet event log
// (KV_INDEXER_EVENT_SOURCE=jetstream; docs/fleet.md, "Replicas follow the
// log"): it opens the log on NATS JetStream, loads the newest fleet
// snapshot before the listen address is bound, then follows the log from
// the position after it, answers reads, writes line-A writes through to the
// log (replica/write_through.h) and refuses the other mutation RPCs, and
// competes with the other replicas for the lease that lets one write the
// next snapshot.
#ifndef KVINDEXER_SERVER_REPLICA_START_H_
#define KVINDEXER_SERVER_REPLICA_START_H_

#include "server/server_wiring.h"

namespace kvindexer {

// Opens the fleet, loads its newest snapshot, serves
// (ServerWiring::Serve) and returns the exit code: kExitFailure, logged,
// when the fleet event log cannot be opened or no snapshot loads.
// REQUIRES: wiring.config() follows the fleet event log; the Indexer has
// applied nothing.
int RunReplica(ServerWiring& wiring);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_REPLICA_START_H_
