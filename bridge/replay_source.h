// The REPLAY primitive of docs/bridge-events.md, "Recovery > Primitives":
// asks SGLang's replay ROUTER socket (SGLANG_KV_REPLAY_ENDPOINT) for every
// buffered batch from a sequence number on. The production implementation
// (ReplayClient) speaks the real DEALER protocol and pages through replies
// the publisher drops; tests substitute fakes.
#ifndef KVINDEXER_BRIDGE_REPLAY_SOURCE_H_
#define KVINDEXER_BRIDGE_REPLAY_SOURCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bridge/live_buffer.h"

namespace kvindexer::bridge {

// At most this many replies are read in answer to one request (one page);
// the next request continues after them.
inline constexpr size_t kMaxReplayBatches = 10'000;
// A whole replay, however many pages it takes, keeps at most this many
// payload bytes and makes at most this many requests.
inline constexpr size_t kMaxReplayBytes = size_t{256} << 20;
inline constexpr size_t kMaxReplayPages = 10'000;

struct ReplayResult {
  // The replies in order (topic empty). When `complete`, their sequence
  // numbers are strictly contiguous from batches.front().seq (which may be
  // greater than the requested start: the publisher no longer held the
  // older ones) up to the last batch the publisher held when the last page
  // was answered. Empty and complete: the publisher holds nothing at or
  // after start.
  std::vector<LiveBatch> batches;
  bool complete = false;
  // Requests it took (1 when nothing was dropped).
  size_t pages = 0;
  // Why the result is not complete (hole the publisher cannot fill, timeout
  // before any reply, too much data, socket error); empty when complete.
  std::string problem;
};

class ReplaySource {
 public:
  virtual ~ReplaySource() = default;
  // Blocking. Returns within the per-reply timeout (5 s) after the last
  // reply, or sooner on shutdown (then incomplete). With `through`, it may
  // stop as soon as it holds that seq: the result is then complete when
  // contiguous up to it (newer batches may follow or not).
  virtual ReplayResult Replay(uint64_t start,
                              std::optional<uint64_t> through) = 0;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_REPLAY_SOURCE_H_
