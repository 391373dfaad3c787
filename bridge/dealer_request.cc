#include "bridge/dealer_request.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvindexer::bridge {
namespace {

// The longest single poll: bounds how late shutdown is noticed.
constexpr std::chrono::milliseconds kPollSlice{50};

}  // namespace

absl::StatusOr<std::unique_ptr<DealerRequest>> DealerRequest::Send(
    zmq::context_t* context, const std::string& endpoint,
    const std::vector<std::string>& frames, const StopRequest* shutdown) {
  try {
    auto socket =
        std::make_unique<zmq::socket_t>(*context, zmq::socket_type::dealer);
    socket->set(zmq::sockopt::linger, 0);
    // SGLang's replay ROUTER drops replies silently once its queue to us
    // holds 64 messages (its SNDHWM). Reading everything off the connection
    // as fast as it comes (no receive limit here) keeps that queue short;
    // what is dropped anyway is asked for again (bridge/replay_client.h).
    // The replies of one request are bounded by the publisher's buffer.
    socket->set(zmq::sockopt::rcvhwm, 0);
    socket->connect(endpoint);
    for (size_t i = 0; i < frames.size(); ++i) {
      const bool last = i + 1 == frames.size();
      // A connected DEALER queues the message until the TCP connection is
      // up; dontwait only fails if that queue is full, which a new socket's
      // is not.
      if (!socket->send(
              zmq::buffer(frames[i]),
              last ? zmq::send_flags::dontwait
                   : zmq::send_flags::dontwait | zmq::send_flags::sndmore)) {
        return absl::UnavailableError(
            absl::StrCat("cannot queue request to \"", endpoint, "\""));
      }
    }
    return std::unique_ptr<DealerRequest>(
        new DealerRequest(std::move(socket), shutdown));
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat(
        "cannot connect ZMQ DEALER socket to \"", endpoint, "\": ", e.what()));
  }
}

absl::StatusOr<std::vector<zmq::message_t>> DealerRequest::Receive(
    Clock::time_point deadline) {
  std::vector<zmq::message_t> frames;
  while (true) {
    if (shutdown_ != nullptr && shutdown_->triggered()) {
      return absl::CancelledError("shutdown requested");
    }
    const auto now = Clock::now();
    if (now >= deadline) return absl::DeadlineExceededError("no reply");
    const auto slice = std::min<std::chrono::milliseconds>(
        kPollSlice,
        std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
    try {
      zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, slice) == 0) continue;
      // All frames of a multipart message arrive together.
      frames.clear();
      while (true) {
        zmq::message_t frame;
        if (!socket_->recv(frame, zmq::recv_flags::dontwait)) {
          if (frames.empty()) break;  // spurious wake-up
          return absl::UnavailableError("ZMQ multipart reply was cut short");
        }
        const bool more = frame.more();
        frames.push_back(std::move(frame));
        if (!more) return frames;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;  // a signal; shutdown is checked above
      return absl::UnavailableError(
          absl::StrCat("ZMQ receive failed: ", e.what()));
    }
  }
}

}  // namespace kvindexer::bridge
