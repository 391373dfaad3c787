// What the multi-stream bridge e2e tests share: a ZMQ PUB socket on
// 127.0.0.1 that sends SGLang's three frames (empty topic, sequence,
// payload), a check of one placement through MatchExternalKv, and the
// publish-until-visible loop that copes with ZMQ's slow joiner.
//
// Thread safety: one LivePublisher per thread.
#ifndef KVINDEXER_TESTS_E2E_LIVE_PUBLISHER_H_
#define KVINDEXER_TESTS_E2E_LIVE_PUBLISHER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "kv_indexer.grpc.pb.h"

namespace kvindexer::bridge::testing {

class LivePublisher {
 public:
  // Binds `port`, or an ephemeral port for 0; nullptr when it is taken.
  static std::unique_ptr<LivePublisher> Bind(int port = 0);

  int port() const { return port_; }
  const std::string& endpoint() const { return endpoint_; }
  // The next batch takes `seq` (0: a publisher that restarted).
  void SetNextSeq(uint64_t seq) { next_seq_ = seq; }
  void Publish(const std::string& payload);

 private:
  LivePublisher();
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
  int port_ = 0;
  uint64_t next_seq_ = 0;
};

// Whether `worker_id` holds `hash` at `tier` ("TIER_HBM", ...).
bool Holds(::kv_indexer::v1::KVIndexer::Stub& stub,
           const std::string& worker_id, int64_t hash, const std::string& tier);

// Publishes `payload` until `effect` holds, for at most `bound`.
bool PublishUntil(LivePublisher& publisher, const std::string& payload,
                  const std::function<bool()>& effect,
                  std::chrono::milliseconds bound = std::chrono::seconds(30));

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_TESTS_E2E_LIVE_PUBLISHER_H_
