// The REPLAY primitive of docs/bridge-events.md, "Recovery > Primitives":
// asks SGLang's replay ROUTER socket (SGLANG_KV_REPLAY_ENDPOINT) for every
// buffered batch from a sequence number on. The production implementation
// (ReplayClient) speaks the real DEALER protocol; tests substitute fakes.
#ifndef KVINDEXER_BRIDGE_REPLAY_SOURCE_H_
#define KVINDEXER_BRIDGE_REPLAY_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bridge/live_buffer.h"

namespace kvindexer::bridge {

// At most this many replies are accepted from one replay request.
inline constexpr size_t kMaxReplayBatches = 10'000;

struct ReplayResult {
  // The replies in the order received (topic empty). When `complete`, their
  // sequence numbers are strictly contiguous from batches.front().seq (which
  // may be greater than the requested start: the publisher no longer held
  // the older ones) and the END marker was received. Empty and complete:
  // the publisher holds nothing at or after start.
  std::vector<LiveBatch> batches;
  bool complete = false;
  // Why the result is not complete (hole, timeout before END, too many
  // replies, socket error); empty when complete.
  std::string problem;
};

class ReplaySource {
 public:
  virtual ~ReplaySource() = default;
  // Blocking. Returns within the per-reply timeout (5 s) after the last
  // reply, or sooner on shutdown (then incomplete).
  virtual ReplayResult Replay(uint64_t start) = 0;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_REPLAY_SOURCE_H_
