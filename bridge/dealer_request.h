// One request on a fresh ZMQ DEALER socket and the replies to it, as the
// replay and snapshot channels use them (docs/bridge-events.md, "Replay and
// snapshot channels"). Each request gets its own socket, and so its own
// identity at the publisher's ROUTER: replies still in flight for an
// abandoned request (one that timed out) are routed to the closed socket
// and dropped by the ROUTER, so they can never be read as replies to a later
// request. Waits poll in short slices so that shutdown interrupts them.
//
// Thread safety: not thread-safe; one DealerRequest belongs to one thread.
#ifndef KVINDEXER_BRIDGE_DEALER_REQUEST_H_
#define KVINDEXER_BRIDGE_DEALER_REQUEST_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bridge/stop_request.h"

namespace kvindexer::bridge {

class DealerRequest {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects a new DEALER to `endpoint` and queues `frames` as one message
  // (the caller includes the empty delimiter frame). ZMQ errors, an unusable
  // endpoint included, are UNAVAILABLE. `context` and `shutdown` must outlive
  // the request; `shutdown` may be null.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DealerRequest>> Send(
      zmq::context_t* context, const std::string& endpoint,
      const std::vector<std::string>& frames, const StopRequest* shutdown);

  // The next reply message, waiting until `deadline`. DEADLINE_EXCEEDED when
  // none arrived in time, CANCELLED on shutdown (noticed within about 50
  // ms), UNAVAILABLE on a ZMQ error.
  [[nodiscard]] absl::StatusOr<std::vector<zmq::message_t>> Receive(
      Clock::time_point deadline);

 private:
  DealerRequest(std::unique_ptr<zmq::socket_t> socket,
                const StopRequest* shutdown)
      : socket_(std::move(socket)), shutdown_(shutdown) {}

  std::unique_ptr<zmq::socket_t> socket_;
  const StopRequest* shutdown_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_DEALER_REQUEST_H_
