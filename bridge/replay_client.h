// ReplaySource over SGLang's replay ROUTER socket (docs/bridge-events.md,
// "Replay and snapshot channels" and "Recovery"). One request per call, on
// a fresh DEALER socket (see bridge/dealer_request.h for why):
//   request  [empty][start: 8 bytes big-endian]
//   replies  [empty][seq: 8 bytes big-endian][payload]  per buffered batch
//   end      [empty][ff x8][empty]
// The result is incomplete when a reply is malformed or below `start`, the
// sequence numbers have a hole, more than kMaxReplayBatches replies arrive,
// no reply (or END) comes within the per-reply timeout, or shutdown is
// requested. A start the publisher no longer holds is not an error: the
// replies simply begin later.
//
// Thread safety: Replay() may be called from one thread at a time.
#ifndef KVINDEXER_BRIDGE_REPLAY_CLIENT_H_
#define KVINDEXER_BRIDGE_REPLAY_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <string>

#include <zmq.hpp>

#include "bridge/replay_source.h"
#include "bridge/shutdown_signal.h"

namespace kvindexer::bridge {

// How long the client waits for each reply frame (SGLang serves replay
// between queue polls, so an idle publisher answers within ~100 ms).
inline constexpr std::chrono::milliseconds kReplayReplyTimeout{5000};

class ReplayClient final : public ReplaySource {
 public:
  // `context` and `shutdown` must outlive the client; `shutdown` may be
  // null. `endpoint` is SGLANG_KV_REPLAY_ENDPOINT for this DP rank.
  ReplayClient(zmq::context_t* context, std::string endpoint,
               const ShutdownSignal* shutdown,
               std::chrono::milliseconds reply_timeout = kReplayReplyTimeout);

  ReplayResult Replay(uint64_t start) override;

 private:
  zmq::context_t* const context_;
  const std::string endpoint_;
  const ShutdownSignal* const shutdown_;
  const std::chrono::milliseconds reply_timeout_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_REPLAY_CLIENT_H_
