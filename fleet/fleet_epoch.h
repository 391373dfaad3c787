// The indexer epoch of a fleet replica (docs/fleet.md, "One epoch per
// log"): every replica of one event log presents the same epoch, computed
// without coordination from what identifies the log's life, so that a
// bridge or router moving between replicas never sees a restart. It changes
// only when the stream is recreated, which loses the log.
//
// The epoch is the first 16 bytes of SHA-256 over
//   <stream name> 0x00 <subject prefix> 0x00 <creation time>
// where the creation time is the decimal number of nanoseconds since the
// Unix epoch that JetStream reports for the stream (its "created"
// timestamp), with no sign or leading zeros. The 16 bytes are written as a
// lowercase, hyphenated UUID (8-4-4-4-12 hex digits), taken as they are: no
// version or variant bits are set.
//
// Thread safety: pure functions.
#ifndef KVINDEXER_FLEET_FLEET_EPOCH_H_
#define KVINDEXER_FLEET_FLEET_EPOCH_H_

#include <string>

#include "fleet/event_log.h"

namespace kvindexer::fleet {

// The bytes the epoch hashes (see above).
std::string FleetEpochInput(const LogIdentity& identity);

// The epoch of the log `identity` names.
std::string FleetEpoch(const LogIdentity& identity);

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_FLEET_EPOCH_H_
