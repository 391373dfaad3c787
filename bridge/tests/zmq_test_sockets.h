// Small helpers for tests that play SGLang's side of a ZMQ channel (PUB,
// replay ROUTER, snapshot ROUTER) on loopback.
//
// Thread safety: as for the ZMQ sockets passed in (one thread each).
#ifndef KVINDEXER_BRIDGE_TESTS_ZMQ_TEST_SOCKETS_H_
#define KVINDEXER_BRIDGE_TESTS_ZMQ_TEST_SOCKETS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

namespace kvindexer::bridge::testing {

// The 8-byte big-endian sequence frame.
std::string SeqBytes(uint64_t seq);

// Binds `socket` to tcp://127.0.0.1:* and returns the endpoint it got.
std::string BindLoopback(zmq::socket_t& socket);

// Sends `frames` as one multipart message.
void SendFrames(zmq::socket_t& socket, const std::vector<std::string>& frames);

// One multipart message, or nullopt after `timeout`.
std::optional<std::vector<std::string>> ReceiveFrames(
    zmq::socket_t& socket, std::chrono::milliseconds timeout);

// A ROUTER socket on loopback playing SGLang's replay or snapshot side.
// Serve() runs a script on a thread of its own; the destructor joins it.
// The ROUTER has no send limit, so scripted replies are never dropped.
class FakeRouter {
 public:
  FakeRouter();
  ~FakeRouter();
  const std::string& endpoint() const { return endpoint_; }
  void Serve(std::function<void(zmq::socket_t&)> script);
  void Join();

 private:
  zmq::context_t context_;
  zmq::socket_t router_;
  std::string endpoint_;
  std::thread thread_;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_ZMQ_TEST_SOCKETS_H_
