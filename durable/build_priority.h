// The CPU priority of a checkpoint build that writers wait for
// (durable/replay_bound.h). Builds run at idle priority so that queries do
// not feel them; once a write waits for one, queries are not what it
// holds back any more, and it runs at normal priority until it ends.
#ifndef KVINDEXER_DURABLE_BUILD_PRIORITY_H_
#define KVINDEXER_DURABLE_BUILD_PRIORITY_H_

#include <sys/types.h>

#include "absl/status/status.h"

namespace kvindexer::durable {

// Whether thread (or single-threaded process) `tid` runs below normal
// priority: SCHED_IDLE, or a positive nice value.
bool RunsBelowNormal(pid_t tid);

// Moves `tid` to SCHED_OTHER at nice 0. Lowering a nice value needs
// CAP_SYS_NICE (or an RLIMIT_NICE that allows it): without it the answer is
// PERMISSION_DENIED and the thread keeps its priority.
absl::Status RaiseToNormal(pid_t tid);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_BUILD_PRIORITY_H_
