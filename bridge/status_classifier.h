// Permanent versus transient apply failures (docs/bridge-events.md,
// "Sending and errors > Error classes").
#ifndef KVINDEXER_BRIDGE_STATUS_CLASSIFIER_H_
#define KVINDEXER_BRIDGE_STATUS_CLASSIFIER_H_

#include "absl/status/status.h"

namespace kvindexer::bridge {

// True for INVALID_ARGUMENT, FAILED_PRECONDITION, NOT_FOUND, ALREADY_EXISTS,
// OUT_OF_RANGE, UNAUTHENTICATED, PERMISSION_DENIED, UNIMPLEMENTED and
// DATA_LOSS: the bridge exits. Every other code (RESOURCE_EXHAUSTED,
// UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN, CANCELLED, ABORTED, ...)
// is transient: reconnect with backoff. OK is neither; it returns false.
bool IsPermanentStatus(absl::StatusCode code);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_STATUS_CLASSIFIER_H_
