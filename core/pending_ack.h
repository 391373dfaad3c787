// PendingAck: a mutating call's answer together with how far the state log
// must be durable before the answer may be given (docs/durability.md, "The
// write-ahead log"). The mutating calls of core/index_operations.h return one
// instead of waiting themselves: the server logs the next mutation while this
// one's sync runs, so that concurrent writers share syncs; a caller that
// answers at once (a test, a replica's log follower) writes `.Wait()`.
//
// Thread safety: a value; Wait may run on any thread, any number of times,
// but never with the Indexer's mutation mutex held.
#ifndef KVINDEXER_CORE_PENDING_ACK_H_
#define KVINDEXER_CORE_PENDING_ACK_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "core/mutation_log.h"

namespace kvindexer {

class [[nodiscard]] PendingAck {
 public:
  PendingAck() = default;
  // An answer with nothing to wait for: the call never reached the log (an
  // invalid request), or no log is attached.
  explicit PendingAck(absl::Status status) : status_(std::move(status)) {}
  // `status`, to be given once `log` is durable up to `end`. A null `log`:
  // nothing to wait for. REQUIRES: `log` outlives the PendingAck.
  PendingAck(absl::Status status, MutationLog* log, uint64_t end)
      : status_(std::move(status)), log_(log), end_(end) {}

  // Whether Wait may block: a log was attached.
  bool waits() const { return log_ != nullptr; }
  // The call's status once the log is durable up to the end the call saw
  // (an error answer too: a gap's refusal must not be taken back by a
  // crash), or the log's UNAVAILABLE when it cannot be made durable.
  absl::Status Wait() const;

 private:
  absl::Status status_;
  MutationLog* log_ = nullptr;
  uint64_t end_ = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PENDING_ACK_H_
