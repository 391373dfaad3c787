// KV_INDEXER_SNAPSHOT_CONCURRENCY (docs/bridge-events.md, "Many streams in
// one process > Snapshot-v2 installs"): at most `limit` snapshot fetches
// with their installs run at a time across the streams of one process. A
// stream holds a permit from before its fetch until its install ended.
//
// Thread safety: all members may be called from any thread.
#ifndef KVINDEXER_BRIDGE_SNAPSHOT_LIMITER_H_
#define KVINDEXER_BRIDGE_SNAPSHOT_LIMITER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "bridge/recovery_environment.h"

namespace kvindexer::bridge {

inline constexpr size_t kDefaultSnapshotConcurrency = 4;
inline constexpr size_t kMinSnapshotConcurrency = 1;
inline constexpr size_t kMaxSnapshotConcurrency = 64;

class SnapshotLimiter {
 public:
  // REQUIRES: limit >= 1.
  explicit SnapshotLimiter(size_t limit) : limit_(limit) {}

  // Takes a permit, waiting while `limit` are held. Returns false, with no
  // permit, once `clock` says the caller must stop (checked at least every
  // `recheck`).
  [[nodiscard]] bool Acquire(
      RecoveryClock* clock,
      std::chrono::milliseconds recheck = std::chrono::milliseconds(50));
  // Gives back a permit Acquire() returned.
  void Release();

  size_t held() const;
  // Callers currently waiting in Acquire().
  size_t waiting() const;

 private:
  const size_t limit_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  size_t held_ = 0;     // guarded by mu_
  size_t waiting_ = 0;  // guarded by mu_
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_SNAPSHOT_LIMITER_H_
