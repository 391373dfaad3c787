#include "bridge/tests/zmq_test_sockets.h"

namespace kvindexer::bridge::testing {

std::string SeqBytes(uint64_t seq) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(seq & 0xff);
    seq >>= 8;
  }
  return out;
}

std::string BindLoopback(zmq::socket_t& socket) {
  socket.bind("tcp://127.0.0.1:*");
  return socket.get(zmq::sockopt::last_endpoint);
}

void SendFrames(zmq::socket_t& socket, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const bool last = i + 1 == frames.size();
    socket.send(zmq::buffer(frames[i]),
                last ? zmq::send_flags::none : zmq::send_flags::sndmore);
  }
}

std::optional<std::vector<std::string>> ReceiveFrames(
    zmq::socket_t& socket, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) return std::nullopt;
  std::vector<std::string> frames;
  while (true) {
    zmq::message_t frame;
    if (!socket.recv(frame, zmq::recv_flags::none)) return std::nullopt;
    frames.push_back(frame.to_string());
    if (!frame.more()) return frames;
  }
}

FakeRouter::FakeRouter() : router_(context_, zmq::socket_type::router) {
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::sndhwm, 0);
  endpoint_ = BindLoopback(router_);
}

FakeRouter::~FakeRouter() { Join(); }

void FakeRouter::Serve(std::function<void(zmq::socket_t&)> script) {
  Join();
  thread_ =
      std::thread([this, script = std::move(script)] { script(router_); });
}

void FakeRouter::Join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace kvindexer::bridge::testing
