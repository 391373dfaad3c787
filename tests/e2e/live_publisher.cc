#include "tests/e2e/live_publisher.h"

#include "grpcpp/grpcpp.h"
#include "tests/support/msgpack_builders.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {

using namespace std::chrono_literals;

LivePublisher::LivePublisher() : socket_(context_, zmq::socket_type::pub) {
  socket_.set(zmq::sockopt::linger, 0);
}

std::unique_ptr<LivePublisher> LivePublisher::Bind(int port) {
  auto publisher = std::unique_ptr<LivePublisher>(new LivePublisher());
  try {
    publisher->socket_.bind("tcp://127.0.0.1:" +
                            (port == 0 ? "*" : std::to_string(port)));
  } catch (const zmq::error_t&) {
    return nullptr;
  }
  publisher->endpoint_ = publisher->socket_.get(zmq::sockopt::last_endpoint);
  publisher->port_ = std::stoi(
      publisher->endpoint_.substr(publisher->endpoint_.rfind(':') + 1));
  return publisher;
}

void LivePublisher::Publish(const std::string& payload) {
  const std::string seq = SeqFrame(next_seq_++);
  socket_.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(seq), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(payload), zmq::send_flags::none);
}

bool Holds(::kv_indexer::v1::KVIndexer::Stub& stub,
           const std::string& worker_id, int64_t hash,
           const std::string& tier) {
  ::kv_indexer::v1::MatchExternalKvRequest request;
  request.add_hashes(hash);
  ::kv_indexer::v1::MatchExternalKvResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  if (!stub.MatchExternalKv(&context, request, &response).ok()) return false;
  for (const auto& match : response.matches()) {
    if (match.worker_id() != worker_id) continue;
    for (const auto& by_tier : match.hashes_by_tier()) {
      if (::kv_indexer::v1::TierType_Name(by_tier.tier()) != tier) continue;
      for (int64_t h : by_tier.hashes()) {
        if (h == hash) return true;
      }
    }
  }
  return false;
}

bool PublishUntil(LivePublisher& publisher, const std::string& payload,
                  const std::function<bool()>& effect,
                  std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline) {
    publisher.Publish(payload);
    if (test_support::WaitUntil(effect, 300ms)) return true;
  }
  return false;
}

}  // namespace kvindexer::bridge::testing
