#include "bridge/tests/fake_publisher.h"

#include "absl/strings/str_cat.h"
#include "tests/support/msgpack_builders.h"

namespace kvindexer::bridge::testing {
namespace {

int TierOf(const std::string& medium) {
  if (medium == "GPU") return 1;
  if (medium == "CPU_PINNED") return 2;
  return 3;
}

}  // namespace

FakePublisher::FakePublisher(Deliver deliver, size_t buffer_steps,
                             bool epoch_labels)
    : deliver_(std::move(deliver)),
      buffer_steps_(buffer_steps),
      epoch_labels_(epoch_labels),
      epoch_("e0") {}

std::string FakePublisher::Topic(const std::string& barrier_id) const {
  std::string topic = "kv";
  if (epoch_labels_) {
    topic += std::string(1, '\0') + "sgl-kv-epoch=" + epoch_;
    if (!barrier_id.empty()) {
      topic += std::string(1, '\0') + "sgl-kv-snapshot=" + barrier_id;
    }
  }
  return topic;
}

uint64_t FakePublisher::Record(const std::vector<PublisherOp>& ops,
                               std::string* payload) {
  MpArray events;
  for (const PublisherOp& op : ops) {
    switch (op.kind) {
      case PublisherOp::Kind::kStore:
        events.push_back(StoreEvent(op.hashes, op.medium));
        for (int64_t h : op.hashes) cache_.insert({h, TierOf(op.medium)});
        break;
      case PublisherOp::Kind::kRemove:
        events.push_back(RemoveEvent(op.hashes, op.medium));
        for (int64_t h : op.hashes) cache_.erase({h, TierOf(op.medium)});
        break;
      case PublisherOp::Kind::kClear:
        events.push_back(ClearEvent());
        cache_.clear();
        break;
    }
  }
  // A distinct timestamp per batch, as SGLang's float ts: equal payloads
  // only for the same batch.
  ts_ += 1.0;
  *payload = PackBatch(std::move(events), ts_);
  const uint64_t seq = next_seq_++;
  buffer_.push_back({seq, "", *payload});
  while (buffer_.size() > buffer_steps_) buffer_.pop_front();
  if (on_record) on_record(seq);
  return seq;
}

uint64_t FakePublisher::Publish(const std::vector<PublisherOp>& ops) {
  std::string payload;
  const uint64_t seq = Record(ops, &payload);
  deliver_(seq, Topic(), std::move(payload));
  return seq;
}

uint64_t FakePublisher::PublishBufferOnly(const std::vector<PublisherOp>& ops) {
  std::string payload;
  return Record(ops, &payload);
}

uint64_t FakePublisher::PublishGarbage() {
  const uint64_t seq = next_seq_++;
  const std::string payload = "\xc1 not msgpack";
  buffer_.push_back({seq, "", payload});
  while (buffer_.size() > buffer_steps_) buffer_.pop_front();
  if (on_record) on_record(seq);
  deliver_(seq, Topic(), payload);
  return seq;
}

void FakePublisher::Restart() {
  next_seq_ = 0;
  ++incarnation_;
  epoch_ = absl::StrCat("e", incarnation_);
  buffer_.clear();
  cache_.clear();
}

void FakePublisher::EvictBefore(uint64_t first) {
  while (!buffer_.empty() && buffer_.front().seq < first) buffer_.pop_front();
}

ReplayResult FakePublisher::Replay(uint64_t start,
                                   std::optional<uint64_t> /*through*/) {
  replay_starts.push_back(start);
  ReplayResult result;
  result.pages = 1;  // the contract's outcome, without the paging
  bool hole = false;
  for (const LiveBatch& batch : buffer_) {
    if (batch.seq < start) continue;
    if (replay_omits.count(batch.seq) != 0) {
      hole = true;
      continue;
    }
    result.batches.push_back(batch);
  }
  if (replay_fail_next > 0) {
    --replay_fail_next;
    result.batches.resize(result.batches.size() / 2);
    result.problem = "timed out before END";
    return result;
  }
  if (hole) {
    result.problem = "hole in the replay";
    return result;
  }
  result.complete = true;
  return result;
}

absl::StatusOr<PublisherSnapshot> FakePublisher::Fetch() {
  if (snapshot_fail_next > 0) {
    --snapshot_fail_next;
    return absl::UnavailableError("snapshot provider busy");
  }
  ++snapshots_served;
  PublisherSnapshot snapshot;
  snapshot.epoch = epoch_;
  snapshot.barrier_id = absl::StrCat("b", snapshots_served);
  for (int64_t h : cached_hashes()) snapshot.hashes.push_back(h);
  std::string payload;
  const uint64_t seq = Record({}, &payload);
  snapshot.barrier_seq = seq;
  snapshot.resume_seq = seq + 1;
  if (deliver_barrier) {
    deliver_(seq, Topic(snapshot.barrier_id), std::move(payload));
  }
  return snapshot;
}

std::set<int64_t> FakePublisher::cached_hashes() const {
  std::set<int64_t> hashes;
  for (const auto& [h, tier] : cache_) hashes.insert(h);
  return hashes;
}

}  // namespace kvindexer::bridge::testing
