#include "bridge/event_subscriber.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::bridge {

absl::Status EventSubscriber::Connect(const std::string& endpoint,
                                      const std::string& topic) {
  try {
    auto socket =
        std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::sub);
    socket->set(zmq::sockopt::linger, 0);
    // Match SGLang's publisher high-water mark so that the subscriber side
    // does not become the tighter bound.
    socket->set(zmq::sockopt::rcvhwm, 100000);
    socket->set(zmq::sockopt::subscribe, topic);
    socket->connect(endpoint);
    socket_ = std::move(socket);
    return absl::OkStatus();
  } catch (const zmq::error_t& e) {
    socket_.reset();
    return absl::UnavailableError(absl::StrCat(
        "cannot connect ZMQ SUB socket to \"", endpoint, "\": ", e.what()));
  }
}

absl::StatusOr<bool> EventSubscriber::Receive(
    std::chrono::milliseconds timeout, std::vector<zmq::message_t>* frames) {
  frames->clear();
  if (!socket_) return absl::UnavailableError("ZMQ socket is not connected");
  try {
    zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) == 0) return false;
    // All frames of a multipart message arrive together.
    while (true) {
      zmq::message_t frame;
      if (!socket_->recv(frame, zmq::recv_flags::dontwait)) {
        if (frames->empty()) return false;  // spurious wake-up
        return absl::UnavailableError("ZMQ multipart message was cut short");
      }
      const bool more = frame.more();
      frames->push_back(std::move(frame));
      if (!more) return true;
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    return absl::UnavailableError(
        absl::StrCat("ZMQ receive failed: ", e.what()));
  }
}

}  // namespace kvindexer::bridge
