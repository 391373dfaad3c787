// ReplaySource over SGLang's replay ROUTER socket (docs/bridge-events.md,
// "Replay and snapshot channels" and "Recovery"). One request per page, each
// on a fresh DEALER socket (see bridge/dealer_request.h for why):
//   request  [empty][start: 8 bytes big-endian]
//   replies  [empty][seq: 8 bytes big-endian][payload]  per buffered batch
//   end      [empty][ff x8][empty]
// SGLang's ROUTER has a send high-water mark of 64 and answers a request in
// one loop that never waits, so whatever does not fit its queue to us is
// dropped silently, the END marker often included. The client therefore
// pages: it keeps the contiguous run of replies a request brought, and when
// a hole shows up (a later seq arrives) or the replies stop without END, it
// asks again from the seq after the run. The replay is complete when a page
// ends with END and no hole (an END after kReplayTrustedPageReplies or more
// replies is confirmed by one more request, since the queue may have drained
// just in time for END after dropping the tail), or, when the caller only
// needs batches up to a seq (`through`), as soon as the run reaches it.
//
// It is incomplete when a reply is malformed or below the requested start,
// no reply at all comes within the reply timeout, a later page no longer
// starts at the seq it asked for (the publisher evicted it meanwhile, or it
// never sends that batch), a page brings nothing new, the whole replay
// exceeds kMaxReplayBytes or kMaxReplayPages, or shutdown is requested. A
// page is cut after kMaxReplayBatches replies and continued by the next. A
// start the publisher no longer holds is not an error on the first page: the
// replies simply begin later.
//
// Thread safety: Replay() may be called from one thread at a time.
#ifndef KVINDEXER_BRIDGE_REPLAY_CLIENT_H_
#define KVINDEXER_BRIDGE_REPLAY_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "bridge/replay_source.h"
#include "bridge/stop_request.h"

namespace kvindexer::bridge {

// How long the client waits for the first reply of a page (SGLang serves
// replay between queue polls, so an idle publisher answers within ~100 ms).
inline constexpr std::chrono::milliseconds kReplayReplyTimeout{5000};
// How long a page may go quiet after its first reply before the rest of it
// counts as dropped. The publisher sends a page in one burst, microseconds
// apart, so a pause this long means the tail (and END) did not fit its
// queue. Too short a wait costs nothing but an extra request: a page that
// ends early is continued by the next one.
inline constexpr std::chrono::milliseconds kReplayPageIdle{50};
// An END that follows at least this many replies of one request is confirmed
// by another request before the replay counts as complete: SGLang's ROUTER
// queues 64 replies (older builds 1,000) before it drops any, so a page
// with fewer replies cannot have lost one.
inline constexpr size_t kReplayTrustedPageReplies = 32;

class ReplayClient final : public ReplaySource {
 public:
  // `context` and `shutdown` must outlive the client; `shutdown` may be
  // null. `endpoint` is SGLANG_KV_REPLAY_ENDPOINT for this DP rank.
  ReplayClient(zmq::context_t* context, std::string endpoint,
               const StopRequest* shutdown,
               std::chrono::milliseconds reply_timeout = kReplayReplyTimeout,
               std::chrono::milliseconds page_idle = kReplayPageIdle);

  ReplayResult Replay(uint64_t start, std::optional<uint64_t> through) override;

 private:
  enum class PageEnd : uint8_t {
    kEnd,     // END after a contiguous run: the replay is complete
    kCut,     // a hole or a silence after the run: ask again after it
    kFailed,  // the replay cannot go on; `problem` says why
  };
  // One request from `start`, appending its contiguous run to `result`.
  PageEnd FetchPage(uint64_t start, bool first_page,
                    std::optional<uint64_t> through, ReplayResult& result,
                    size_t& bytes);

  zmq::context_t* const context_;
  const std::string endpoint_;
  const StopRequest* const shutdown_;
  const std::chrono::milliseconds reply_timeout_;
  const std::chrono::milliseconds page_idle_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_REPLAY_CLIENT_H_
