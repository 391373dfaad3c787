// A simulated SGLang KV-event publisher for the recovery tests: it numbers
// batches from 0 per incarnation, encodes them as SGLang does
// (msgpack_builders.h), delivers them through a pluggable live path (where
// tests inject drops, duplicates and delays), keeps the last `buffer_steps`
// batches for replay, and answers snapshot-v1 requests (publishing the
// barrier batch), with knobs for replay holes and failures. It also keeps
// the model of what the worker's cache holds now: the truth the index is
// compared with.
//
// Thread safety: not thread-safe; everything runs on the test's thread.
#ifndef KVINDEXER_BRIDGE_TESTS_FAKE_PUBLISHER_H_
#define KVINDEXER_BRIDGE_TESTS_FAKE_PUBLISHER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bridge/replay_source.h"
#include "bridge/snapshot_source.h"

namespace kvindexer::bridge::testing {

struct PublisherOp {
  enum class Kind { kStore, kRemove, kClear };
  Kind kind = Kind::kStore;
  std::vector<int64_t> hashes;
  std::string medium = "GPU";  // GPU, CPU_PINNED or DISK

  static PublisherOp Store(std::vector<int64_t> h, std::string m = "GPU") {
    return {Kind::kStore, std::move(h), std::move(m)};
  }
  static PublisherOp Remove(std::vector<int64_t> h, std::string m = "GPU") {
    return {Kind::kRemove, std::move(h), std::move(m)};
  }
  static PublisherOp Clear() { return {Kind::kClear, {}, "GPU"}; }
};

class FakePublisher : public ReplaySource, public SnapshotSource {
 public:
  using Deliver =
      std::function<void(uint64_t seq, std::string topic, std::string payload)>;

  // `epoch_labels`: topics carry "\0sgl-kv-epoch=<epoch>" (snapshot builds).
  FakePublisher(Deliver deliver, size_t buffer_steps, bool epoch_labels);

  // Publishes one batch live and into the replay buffer; returns its seq.
  uint64_t Publish(const std::vector<PublisherOp>& ops);
  // Into the replay buffer only: as if the live message was lost.
  uint64_t PublishBufferOnly(const std::vector<PublisherOp>& ops);
  // Publishes an undecodable payload.
  uint64_t PublishGarbage();
  // A new incarnation: seq back to 0, a new epoch, empty cache and buffer.
  void Restart();
  // Drops the oldest buffered batches until `first` is the oldest.
  void EvictBefore(uint64_t first);

  // Answers with the whole buffer from `start`, whatever `through` says.
  ReplayResult Replay(uint64_t start, std::optional<uint64_t> through) override;
  absl::StatusOr<PublisherSnapshot> Fetch() override;

  std::string Topic(const std::string& barrier_id = "") const;
  uint64_t next_seq() const { return next_seq_; }
  const std::string& epoch() const { return epoch_; }
  // The worker's cache now: (hash, tier number).
  const std::set<std::pair<int64_t, int>>& cache() const { return cache_; }
  std::set<int64_t> cached_hashes() const;
  // Puts a block in the cache with no batch, as if stored before anything
  // the test looks at.
  void Hold(int64_t hash, int tier = 1) { cache_.insert({hash, tier}); }

  // Knobs and observations.
  std::set<uint64_t> replay_omits;  // never sent by replay (holes)
  int replay_fail_next = 0;         // next replays time out halfway
  int snapshot_fail_next = 0;       // next fetches fail
  bool deliver_barrier = true;      // false: the barrier is lost live
  std::vector<uint64_t> replay_starts;
  int snapshots_served = 0;
  // Called after each batch is recorded (cache() is then the cache as of
  // that batch), the snapshot barrier included.
  std::function<void(uint64_t seq)> on_record;

 private:
  uint64_t Record(const std::vector<PublisherOp>& ops, std::string* payload);

  Deliver deliver_;
  const size_t buffer_steps_;
  const bool epoch_labels_;
  uint64_t next_seq_ = 0;
  uint64_t incarnation_ = 0;
  double ts_ = 1.0;
  std::string epoch_;
  std::deque<LiveBatch> buffer_;
  std::set<std::pair<int64_t, int>> cache_;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_FAKE_PUBLISHER_H_
