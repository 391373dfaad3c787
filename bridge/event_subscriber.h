// The ZMQ side of the bridge: a SUB socket with a prefix subscription,
// connected to SGLang's PUB endpoint (docs/bridge-events.md, "The ZMQ stream"
// and "Sending and errors > Connection").
//
// Thread safety: not thread-safe (ZMQ sockets belong to one thread).
#ifndef KVINDEXER_BRIDGE_EVENT_SUBSCRIBER_H_
#define KVINDEXER_BRIDGE_EVENT_SUBSCRIBER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "absl/status/statusor.h"

namespace kvindexer::bridge {

class EventSubscriber {
 public:
  // `context` must outlive the subscriber.
  explicit EventSubscriber(zmq::context_t* context) : context_(context) {}

  // Creates the socket, subscribes to `topic` (prefix; "" = everything) and
  // connects to `endpoint`. ZMQ errors, including an unusable endpoint,
  // return UNAVAILABLE.
  [[nodiscard]] absl::Status Connect(const std::string& endpoint,
                                     const std::string& topic);

  // Waits up to `timeout` for one multipart message and stores its frames in
  // `*frames`. Returns false on timeout, UNAVAILABLE on a ZMQ error.
  [[nodiscard]] absl::StatusOr<bool> Receive(
      std::chrono::milliseconds timeout, std::vector<zmq::message_t>* frames);

 private:
  zmq::context_t* context_;
  std::unique_ptr<zmq::socket_t> socket_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_EVENT_SUBSCRIBER_H_
