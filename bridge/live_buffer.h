// The bounded queue between the bridge's ZMQ reader thread and its RPC side
// (docs/bridge-events.md, "Recovery"). The reader never blocks on the
// server: it pushes every live message it receives; when the buffer already
// holds `capacity` batches the new batch is dropped and the loss is reported
// to the consumer, in order, as one kOverflow item carrying the sequence
// number of the first dropped batch (a gap the RPC side then repairs).
// Connection events of the SUB socket (seen through the ZMQ socket monitor)
// travel through the same queue so the consumer sees them in order with the
// batches around them.
//
// Thread safety: one producer thread and one consumer thread; every method
// may be called from either.
#ifndef KVINDEXER_BRIDGE_LIVE_BUFFER_H_
#define KVINDEXER_BRIDGE_LIVE_BUFFER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace kvindexer::bridge {

// One live message, owned. `topic` is empty for 2-frame messages.
struct LiveBatch {
  uint64_t seq = 0;
  std::string topic;
  std::string payload;
};

struct LiveItem {
  enum class Kind : uint8_t {
    kBatch,         // `batch` is a live message
    kMalformed,     // a message that failed frame parsing; `detail` says why
    kOverflow,      // batches were dropped from `first_dropped_seq` on
    kDisconnected,  // the SUB socket lost its connection to the publisher
    kConnected,     // the SUB socket (re)connected to the publisher
    kReaderFailed,  // the reader thread ended on a ZMQ error (`detail`); the
                    // last item it queues
  };
  Kind kind = Kind::kBatch;
  LiveBatch batch;                 // kBatch
  uint64_t first_dropped_seq = 0;  // kOverflow
  uint64_t dropped = 0;            // kOverflow: how many batches were dropped
  size_t frame_count = 0;          // kMalformed: of the first message
  std::string detail;              // kMalformed (the first), kReaderFailed
  // kMalformed: consecutive malformed messages merged into this item, and
  // how many of them had 2 or 3 frames (a sequence frame of the wrong
  // length, "Stats" reason seq_length; the others: frame_count). Push()
  // fills both; a pushed kMalformed stands for one message.
  uint64_t malformed = 1;
  uint64_t malformed_seq_length = 0;
};

class LiveBuffer {
 public:
  // REQUIRES: capacity > 0 (KV_INDEXER_LIVE_BUFFER_BATCHES).
  explicit LiveBuffer(size_t capacity);
  LiveBuffer(const LiveBuffer&) = delete;
  LiveBuffer& operator=(const LiveBuffer&) = delete;

  // Producer side. Never blocks. A batch that does not fit is dropped and
  // counted. Each run of consecutive drops is reported by one kOverflow item
  // standing where the first dropped batch would have been, so every item
  // queued after the drops (including the next Pop's, if nothing else was
  // queued) comes after it. Marker items (kMalformed, kDisconnected,
  // kConnected) are always queued; one arriving during a run ends the run.
  // A kMalformed right after a queued kMalformed is merged into it (its
  // counts grow, the first's detail is kept), so a publisher sending only
  // garbage cannot grow the queue without bound.
  // After Close() everything pushed is discarded.
  void Push(LiveItem item);

  // Consumer side: the oldest item, waiting up to `timeout`; nullopt on
  // timeout or after Close().
  std::optional<LiveItem> Pop(std::chrono::milliseconds timeout);

  // Wakes a waiting Pop and makes every later Pop return nullopt at once.
  void Close();

  // Batches currently queued (markers not counted).
  size_t batches() const;
  // Batches dropped since construction.
  uint64_t dropped_total() const;
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Batches and markers in arrival order. While batches are being dropped,
  // the kOverflow item for that run sits at the back and its count grows;
  // the next item that is queued closes the run.
  std::deque<LiveItem> items_;
  size_t batches_ = 0;
  bool overflow_open_ = false;  // items_.back() is the current run's kOverflow
  uint64_t dropped_total_ = 0;
  bool closed_ = false;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_LIVE_BUFFER_H_
