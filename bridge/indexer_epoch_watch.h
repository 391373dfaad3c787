// The indexer_epoch a multi-stream bridge last saw in an answer
// (Configure, Begin), and how many times it changed (docs/bridge-events.md,
// "Many streams in one process > A new indexer epoch"). A change means the
// index no longer holds everything it acknowledged: every stream
// resynchronises. The first epoch seen is not a change.
//
// Thread safety: all members may be called from any thread.
#ifndef KVINDEXER_BRIDGE_INDEXER_EPOCH_WATCH_H_
#define KVINDEXER_BRIDGE_INDEXER_EPOCH_WATCH_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace kvindexer::bridge {

class IndexerEpochWatch {
 public:
  // Records the epoch of one answer; an empty one (a server that sends
  // none) is ignored. True when it differs from the one seen before.
  bool Observe(const std::string& epoch);
  // Changes seen so far; a stream resynchronises when it grew.
  uint64_t changes() const { return changes_.load(); }
  std::string epoch() const;

 private:
  mutable std::mutex mu_;
  std::string epoch_;  // guarded by mu_
  std::atomic<uint64_t> changes_{0};
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_INDEXER_EPOCH_WATCH_H_
