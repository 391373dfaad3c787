// The live side of the bridge in recovery mode (docs/bridge-events.md,
// "Recovery"): a thread of its own that owns the ZMQ SUB socket, parses each
// live message and pushes it into a LiveBuffer, so a slow indexer never
// stalls ZMQ reception. The live END marker (seq ff x8) is skipped; messages
// that fail frame parsing become kMalformed items. A ZMQ socket monitor on
// the SUB socket turns connection events into kConnected (ZMTP handshake
// with the publisher done) and kDisconnected items, in order with the
// batches: nothing read after the disconnect was noticed precedes its
// kDisconnected (the last messages of the old connection may follow it, as
// may the next connection's before its kConnected), and the two alternate,
// starting with kConnected. (ZMQ reconnects a SUB socket
// silently; without these markers a publisher restart would look like a
// gap.) If the thread ends on a ZMQ error it queues a kReaderFailed item
// naming it.
//
// Thread safety: Start() and Stop() from one owning thread; stats() from
// any thread.
#ifndef KVINDEXER_BRIDGE_LIVE_READER_H_
#define KVINDEXER_BRIDGE_LIVE_READER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "absl/status/status.h"
#include "bridge/live_buffer.h"

namespace kvindexer::bridge {

class LiveReader {
 public:
  struct Stats {
    uint64_t batches = 0;      // read and handed to the buffer as kBatch
    uint64_t malformed = 0;    // pushed as kMalformed
    uint64_t end_markers = 0;  // live END markers skipped
    uint64_t disconnects = 0;  // kDisconnected pushed
  };

  // `context` and `buffer` must outlive the reader. `topic` is a prefix
  // subscription ("" = everything).
  LiveReader(zmq::context_t* context, std::string endpoint, std::string topic,
             LiveBuffer* buffer);
  LiveReader(const LiveReader&) = delete;
  LiveReader& operator=(const LiveReader&) = delete;
  ~LiveReader();  // Stop()

  // Creates the SUB socket and its monitor, subscribes, connects and starts
  // the reader thread. An unusable endpoint or any other ZMQ error is
  // UNAVAILABLE and leaves nothing running.
  // REQUIRES: called at most once.
  [[nodiscard]] absl::Status Start();

  // Ends the thread and closes the sockets; returns within about 100 ms.
  // Idempotent. Does not close the buffer.
  void Stop();

  Stats stats() const;

 private:
  void Run();
  // Reads every message already queued on the SUB socket.
  void DrainSubscriber();
  // Handles one monitor event; false if the monitor socket is unusable.
  bool HandleMonitorEvent();
  void PushBatch(const std::vector<zmq::message_t>& frames);
  void PushMarker(LiveItem::Kind kind);
  // The thread ends on a ZMQ error: logs it and queues kReaderFailed, so the
  // engine stops instead of idling on a queue nobody fills.
  void Fail(std::string detail);

  zmq::context_t* const context_;
  const std::string endpoint_;
  const std::string topic_;
  LiveBuffer* const buffer_;

  std::unique_ptr<zmq::socket_t> sub_;
  std::unique_ptr<zmq::socket_t> monitor_;
  std::string monitor_endpoint_;
  bool connected_ = false;  // reader thread only
  std::thread thread_;
  std::atomic<bool> stop_{false};

  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> malformed_{0};
  std::atomic<uint64_t> end_markers_{0};
  std::atomic<uint64_t> disconnects_{0};
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_LIVE_READER_H_
