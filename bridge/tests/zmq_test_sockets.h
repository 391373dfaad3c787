// Small helpers for tests that play SGLang's side of a ZMQ channel (PUB,
// replay ROUTER, snapshot ROUTER) on loopback.
//
// Thread safety: as for the ZMQ sockets passed in (one thread each).
#ifndef KVINDEXER_BRIDGE_TESTS_ZMQ_TEST_SOCKETS_H_
#define KVINDEXER_BRIDGE_TESTS_ZMQ_TEST_SOCKETS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
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

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_ZMQ_TEST_SOCKETS_H_
