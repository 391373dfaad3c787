// FakeSglangPublisher: SGLang's KV-event publisher reduced to its sockets,
// for the bridge's recovery tests (docs/bridge-events.md, "Replay and
// snapshot channels"; the frames are those of SGLang's kv_events.py).
//
//   PUB      [topic][seq 8 B BE][payload], topic = <topic> or, with an
//            epoch, <topic>\0sgl-kv-epoch=<epoch>
//   replay   ROUTER with SNDHWM 64: request [identity][empty][start 8 B
//            BE]; reply one [identity][empty][seq 8 B BE][payload] per
//            buffered batch with seq >= start, then [identity][empty][ff
//            x8][empty], all sent in one tight loop that never waits, so
//            that whatever does not fit the 64-message queue to the client
//            is dropped silently, often the END marker too
//   snapshot ROUTER (optional): request [identity][empty]["snapshot-v1"]
//            or, unless Options::snapshot_protocols is kV1Only,
//            ["snapshot-v2"] (a v1-only fake answers that, like an old
//            SGLang, with [..]["error"]["invalid snapshot-v1 request"]);
//            the capture publishes a barrier batch (no events) under
//            <topic>\0sgl-kv-epoch=<epoch>\0sgl-kv-snapshot=<barrier_id> that
//            takes the next seq and enters the replay buffer, then replies
//            [..]["header"][header], [..]["chunk"][records] per <= 4,096
//            records, [..]["end"][empty]; or [..]["error"][message].
//            v1: header msgpack [1, epoch, replica_rank, resume_seq,
//            barrier_seq, barrier_id, record_count], records [[parent|nil,
//            [hash]], ...]. v2: header a msgpack map {version: 2, namespace,
//            model, worker_id, dp_rank, worker_epoch, hash_schema_version,
//            page_size, is_bigram, barrier_seq, resume_seq, barrier_id,
//            record_count, cache_spec: nil} (epoch, replica_rank and
//            worker_generation instead with Options::v2_alternate_keys; a
//            string worker_generation with Options::v2_worker_generation),
//            records [{block_hash, parent_block_hash, block_size, tier,
//            component_mask}, ...]. The records are SGLang's mirrors of what
//            was published (tests/support/fake_snapshot_mirror.h), or for v1
//            those given to SetSnapshotRecords().
//
// Like SGLang, every batch gets the next sequence number (0 after a
// restart) and enters a bounded replay buffer (`buffer_steps`), also when it
// is not sent live. The ROUTER sockets are served by an internal thread
// (SGLang serves them on its publisher thread). Like SGLang's, the replay
// ROUTER has a send high-water mark of 64 (Options::replay_sndhwm), so a
// reply of more than a few dozen batches arrives with holes.
//
// The live socket is an XPUB in verbose mode: the same frames as SGLang's
// PUB for a subscriber, but the fake sees every subscription arrive, so a
// test can wait until a subscriber has joined instead of racing ZMQ's slow
// joiner (subscriptions()).
//
// All sockets bind 127.0.0.1 on ephemeral ports; the ports stay the same for
// the object's lifetime, across StopLive()/StartLive() and Restart().
//
// Thread safety: every public method may be called from any thread.
#ifndef KVINDEXER_TESTS_SUPPORT_FAKE_SGLANG_PUBLISHER_H_
#define KVINDEXER_TESTS_SUPPORT_FAKE_SGLANG_PUBLISHER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "tests/support/fake_snapshot_mirror.h"

namespace kvindexer::bridge::testing {

class FakeSglangPublisher {
 public:
  // The snapshot commands served: an SGLang that speaks snapshot-v1 only,
  // or a newer one that also speaks snapshot-v2.
  enum class SnapshotProtocols { kV1Only, kV1AndV2 };

  struct Options {
    std::string topic;                 // base topic; "" is SGLang's default
    std::optional<std::string> epoch;  // topic suffix; required for snapshots
    size_t buffer_steps = 10'000;      // replay buffer depth (SGLang default)
    bool replay = true;                // bind the replay ROUTER
    bool snapshot = false;             // bind the snapshot ROUTER
    int64_t replica_rank = 0;          // header field of snapshot-v1 and -v2
    SnapshotProtocols snapshot_protocols = SnapshotProtocols::kV1AndV2;
    // The v2 header spells the epoch "epoch" and the rank "replica_rank"
    // and adds worker_generation (another upstream variant).
    bool v2_alternate_keys = false;
    // A string worker_generation in the v2 header (SGLang's fork workers);
    // with v2_alternate_keys it replaces that variant's integer.
    std::optional<std::string> v2_worker_generation;
    // The replay ROUTER's send high-water mark: SGLang's 64; 0 is
    // unlimited (replies always arrive whole).
    int replay_sndhwm = 64;
    // The PUB socket's send high-water mark (SGLang's default `hwm`):
    // beyond it, batches to a subscriber that does not read are dropped.
    int pub_hwm = 100'000;
  };

  explicit FakeSglangPublisher(Options options);
  FakeSglangPublisher() : FakeSglangPublisher(Options()) {}
  ~FakeSglangPublisher();
  FakeSglangPublisher(const FakeSglangPublisher&) = delete;
  FakeSglangPublisher& operator=(const FakeSglangPublisher&) = delete;

  // "tcp://127.0.0.1:<port>"; replay/snapshot are empty when not bound.
  const std::string& pub_endpoint() const { return pub_endpoint_; }
  const std::string& replay_endpoint() const { return replay_endpoint_; }
  const std::string& snapshot_endpoint() const { return snapshot_endpoint_; }

  // Assigns the next sequence number, buffers the batch and sends it live
  // (not live while StopLive() is in effect). Returns the sequence number.
  uint64_t Publish(const std::string& payload);
  // Assigns the next sequence number and buffers the batch without sending
  // it live (a message the subscriber never sees).
  uint64_t BufferOnly(const std::string& payload);
  // Sends a buffered batch live again under its own sequence number (a
  // duplicate delivery; useful against ZMQ's slow joiner). False if `seq` is
  // no longer buffered.
  bool Resend(uint64_t seq);
  // The sequence number the next batch gets.
  uint64_t next_seq() const;
  // Makes the next batch take `seq` (a publisher whose earlier batches were
  // never seen). Does not touch the buffer.
  void SetNextSeq(uint64_t seq);

  // A new publisher incarnation: sequence numbers from 0 again, an empty
  // replay buffer, empty snapshot mirrors, and the given epoch (nullopt
  // keeps the current one).
  // Fault knobs and the request records are kept. The sockets are kept
  // (pair with StopLive()/StartLive() to look like a process restart).
  void Restart(std::optional<std::string> new_epoch = std::nullopt);
  void SetEpoch(std::optional<std::string> epoch);

  // Closes the PUB socket (subscribers see the connection drop) / binds a
  // new one on the same port. Batches published meanwhile are buffered only.
  void StopLive();
  void StartLive();
  bool live() const;
  // Subscribe messages received on the live socket so far (every
  // subscriber's, every (re)connection's; never decreases). Once it has
  // grown past a value read before a subscriber connected, batches sent
  // live reach that subscriber.
  size_t subscriptions();

  // Fault knobs. `seq` is omitted from every replay reply (a hole).
  void OmitFromReplay(uint64_t seq);
  void ClearReplayOmissions();
  // Drops buffered batches with seq < `seq` now (as if evicted by newer
  // ones).
  void EvictBelow(uint64_t seq);
  // The next snapshot requests are answered with an `error` frame carrying
  // `message`; nullopt answers them normally again.
  void SetSnapshotError(std::optional<std::string> message);
  // The records the next snapshot-v1 replies carry instead of the mirror
  // of the published batches (snapshot-v2 replies always carry the mirror).
  void SetSnapshotRecords(std::vector<SnapshotRecord> records);
  // The mirrors of the published batches as the next snapshot would send
  // them (cleared by Restart()). Maintained only with Options::snapshot.
  std::vector<SnapshotRecord> SnapshotV1Mirror() const;
  std::vector<SnapshotV2Record> SnapshotV2Mirror() const;

  // The start of every well-formed replay request received, in order.
  std::vector<uint64_t> replay_starts() const;
  // For the same requests: when each was received and when its last reply
  // frame (the END marker) had been handed to ZMQ (benchmarks' phases).
  struct ReplayTiming {
    std::chrono::steady_clock::time_point received;
    std::chrono::steady_clock::time_point replied;
    size_t batches = 0;  // replies sent before the END marker
  };
  std::vector<ReplayTiming> replay_timings() const;
  // Snapshot requests of a protocol the fake serves (answered with a
  // snapshot or an error).
  size_t snapshot_requests() const;
  // snapshot-v2 requests a kV1Only fake refused.
  size_t refused_snapshot_requests() const;
  // Requests whose frames matched neither protocol (logged and ignored by
  // SGLang).
  size_t malformed_requests() const;
  // Sequence numbers currently buffered, oldest first.
  std::vector<uint64_t> buffered_seqs() const;

  // Topic frames as sent: <topic>[\0sgl-kv-epoch=<epoch>], and the barrier
  // topic for `barrier_id`.
  std::string LiveTopic() const;
  std::string BarrierTopic(const std::string& barrier_id) const;

 private:
  struct Buffered {
    uint64_t seq;
    std::string payload;
  };

  // REQUIRES: mu_ held.
  uint64_t AppendLocked(const std::string& payload, bool send_live,
                        const std::string& topic);
  void SendLiveLocked(const std::string& topic, uint64_t seq,
                      const std::string& payload);
  std::string LiveTopicLocked() const;
  void BindPubLocked();
  void DrainSubscriptionsLocked();

  void ServeLoop();
  void ServeReplay();
  void ServeSnapshot();
  // What one snapshot capture took under mu_.
  struct SnapshotCapture {
    std::string epoch;
    uint64_t barrier_seq = 0;
    std::string barrier_id;
    std::vector<SnapshotRecord> v1_records;
    std::vector<SnapshotV2Record> v2_records;
  };
  // The header payload, then one payload per chunk.
  std::vector<std::string> SnapshotV1Payloads(
      const SnapshotCapture& capture) const;
  std::vector<std::string> SnapshotV2Payloads(
      const SnapshotCapture& capture) const;

  const Options options_;
  zmq::context_t context_{1};

  mutable std::mutex mu_;
  std::optional<zmq::socket_t> pub_;  // guarded by mu_; nullopt while stopped
  std::optional<std::string> epoch_;
  uint64_t next_seq_ = 0;
  std::deque<Buffered> buffer_;
  std::set<uint64_t> omitted_;
  std::optional<std::string> snapshot_error_;
  std::optional<std::vector<SnapshotRecord>> snapshot_records_;
  SnapshotMirror mirror_;  // of every batch buffered, with options_.snapshot
  uint64_t barriers_ = 0;
  std::vector<uint64_t> replay_starts_;
  std::vector<ReplayTiming> replay_timings_;
  size_t snapshot_requests_ = 0;
  size_t refused_snapshot_requests_ = 0;
  size_t malformed_requests_ = 0;
  size_t subscriptions_ = 0;

  // Used by the serving thread only (after construction).
  std::optional<zmq::socket_t> replay_;
  std::optional<zmq::socket_t> snapshot_;

  std::string pub_endpoint_;
  std::string replay_endpoint_;
  std::string snapshot_endpoint_;

  std::atomic<bool> stop_{false};
  std::thread server_;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_TESTS_SUPPORT_FAKE_SGLANG_PUBLISHER_H_
