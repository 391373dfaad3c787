// RunStandalone: kv-indexer-server on its own (KV_INDEXER_EVENT_SOURCE=grpc):
// its clients change the index through the mutation RPCs. With
// KV_INDEXER_DATA_DIR the state is recovered from the data directory before
// the listen address is bound, and every mutation is logged there while the
// server serves (docs/durability.md); without it a restart empties the
// index.
#ifndef KVINDEXER_SERVER_STANDALONE_START_H_
#define KVINDEXER_SERVER_STANDALONE_START_H_

#include "server/server_wiring.h"

namespace kvindexer {

// Recovers the data directory when one is configured, serves
// (ServerWiring::Serve) and returns the exit code: kExitFailure, logged,
// when the directory cannot be used. REQUIRES: wiring.config() does not
// follow the fleet event log; the Indexer has applied nothing.
int RunStandalone(ServerWiring& wiring);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STANDALONE_START_H_
