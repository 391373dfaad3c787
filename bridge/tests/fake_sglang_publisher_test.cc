// FakeSglangPublisher against plain ZMQ clients (a DEALER for replay and
// snapshot, a SUB for the live stream): the fake must speak SGLang's frames
// before the bridge's recovery tests can rely on it.
//
// Live delivery is checked inside bounded loops that resend until the SUB
// has joined (ZMQ's slow joiner); nothing waits on a sleep.
#include "tests/support/fake_sglang_publisher.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <msgpack.hpp>
#include <zmq.hpp>

#include "bridge/replay_client.h"
#include "bridge/snapshot_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/msgpack_builders.h"
#include "tests/support/wait_until.h"

namespace kvindexer::bridge::testing {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using ::kvindexer::test_support::WaitUntil;
using ::testing::ElementsAre;

constexpr auto kBound = 10s;

uint64_t SeqOf(const std::string& frame) {
  uint64_t seq = 0;
  for (unsigned char c : frame) seq = (seq << 8) | c;
  return seq;
}

// Receives one multipart message, waiting up to `timeout`; empty on timeout.
std::vector<std::string> Receive(zmq::socket_t& socket,
                                 std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) <= 0) return {};
  std::vector<std::string> frames;
  while (true) {
    zmq::message_t frame;
    if (!socket.recv(frame, zmq::recv_flags::none)) break;
    frames.push_back(frame.to_string());
    if (!frame.more()) break;
  }
  return frames;
}

// A fresh DEALER (no receive limit, as the bridge's) that has sent
// [empty][frame] to `endpoint`.
zmq::socket_t Ask(zmq::context_t& context, const std::string& endpoint,
                  const std::string& frame) {
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::rcvhwm, 0);
  dealer.connect(endpoint);
  dealer.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(frame), zmq::send_flags::none);
  return dealer;
}

struct ReplayReply {
  std::vector<uint64_t> seqs;
  std::vector<std::string> payloads;
  bool ended = false;
};

// One replay request from a fresh DEALER, read until the END marker.
ReplayReply Replay(zmq::context_t& context, const std::string& endpoint,
                   uint64_t start) {
  zmq::socket_t dealer = Ask(context, endpoint, SeqFrame(start));
  ReplayReply reply;
  while (true) {
    std::vector<std::string> frames = Receive(dealer, kBound);
    if (frames.empty()) break;
    EXPECT_EQ(frames.size(), 3u);
    if (frames.size() != 3) break;
    EXPECT_EQ(frames[0], "");
    if (frames[1] == std::string(8, '\xff')) {
      EXPECT_EQ(frames[2], "");
      reply.ended = true;
      break;
    }
    reply.seqs.push_back(SeqOf(frames[1]));
    reply.payloads.push_back(frames[2]);
  }
  return reply;
}

// A SUB on everything; returns the first live message it sees, publishing
// `publish()` again between waits until one arrives.
class Subscriber {
 public:
  Subscriber(zmq::context_t& context, const std::string& endpoint)
      : socket_(context, zmq::socket_type::sub) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::subscribe, "");
    socket_.connect(endpoint);
  }

  std::vector<std::string> ReceiveWhile(const std::function<void()>& publish) {
    const auto deadline = std::chrono::steady_clock::now() + kBound;
    while (std::chrono::steady_clock::now() < deadline) {
      publish();
      std::vector<std::string> frames = Receive(socket_, 100ms);
      if (!frames.empty()) return frames;
    }
    return {};
  }

  std::vector<std::string> Next(std::chrono::milliseconds timeout = kBound) {
    return Receive(socket_, timeout);
  }

 private:
  zmq::socket_t socket_;
};

TEST(FakeSglangPublisherTest, ReplaysBufferedBatchesWithEndMarker) {
  FakeSglangPublisher publisher;
  zmq::context_t context(1);
  EXPECT_EQ(publisher.Publish("p0"), 0u);
  EXPECT_EQ(publisher.BufferOnly("p1"), 1u);
  EXPECT_EQ(publisher.Publish("p2"), 2u);

  ReplayReply all = Replay(context, publisher.replay_endpoint(), 0);
  EXPECT_TRUE(all.ended);
  EXPECT_THAT(all.seqs, ElementsAre(0, 1, 2));
  EXPECT_THAT(all.payloads, ElementsAre("p0", "p1", "p2"));

  ReplayReply tail = Replay(context, publisher.replay_endpoint(), 2);
  EXPECT_TRUE(tail.ended);
  EXPECT_THAT(tail.seqs, ElementsAre(2));

  ReplayReply none = Replay(context, publisher.replay_endpoint(), 3);
  EXPECT_TRUE(none.ended);
  EXPECT_TRUE(none.seqs.empty());

  EXPECT_THAT(publisher.replay_starts(), ElementsAre(0, 2, 3));
  EXPECT_EQ(publisher.malformed_requests(), 0u);
}

TEST(FakeSglangPublisherTest, BoundedBufferOmissionsAndEviction) {
  FakeSglangPublisher::Options options;
  options.buffer_steps = 3;
  FakeSglangPublisher publisher(options);
  zmq::context_t context(1);
  for (int i = 0; i < 5; ++i) publisher.BufferOnly("p" + std::to_string(i));
  EXPECT_THAT(publisher.buffered_seqs(), ElementsAre(2, 3, 4));
  // An evicted start is not an error: the replies start later.
  EXPECT_THAT(Replay(context, publisher.replay_endpoint(), 0).seqs,
              ElementsAre(2, 3, 4));

  publisher.OmitFromReplay(3);
  EXPECT_THAT(Replay(context, publisher.replay_endpoint(), 0).seqs,
              ElementsAre(2, 4));
  publisher.ClearReplayOmissions();

  publisher.EvictBelow(4);
  EXPECT_THAT(Replay(context, publisher.replay_endpoint(), 0).seqs,
              ElementsAre(4));
}

TEST(FakeSglangPublisherTest, IgnoresMalformedReplayRequests) {
  FakeSglangPublisher publisher;
  zmq::context_t context(1);
  publisher.BufferOnly("p0");
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(publisher.replay_endpoint());
  dealer.send(zmq::buffer(std::string("oops")), zmq::send_flags::none);
  // Unanswered; a well-formed request on the same socket still works.
  const std::string start = SeqFrame(0);
  dealer.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(start), zmq::send_flags::none);
  std::vector<std::string> first = Receive(dealer, kBound);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(SeqOf(first[1]), 0u);
  EXPECT_EQ(publisher.malformed_requests(), 1u);
  EXPECT_THAT(publisher.replay_starts(), ElementsAre(0));
}

TEST(FakeSglangPublisherTest, LiveFramesTopicsAndRestart) {
  FakeSglangPublisher::Options options;
  options.topic = "kv";
  options.epoch = "e1";
  FakeSglangPublisher publisher(options);
  zmq::context_t context(1);
  Subscriber sub(context, publisher.pub_endpoint());

  std::vector<std::string> first =
      sub.ReceiveWhile([&] { publisher.Publish("probe"); });
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0], "kv\0sgl-kv-epoch=e1"s);
  EXPECT_EQ(first[2], "probe");
  // Drain the remaining probes; then the stream is exact.
  while (!sub.Next(200ms).empty()) {
  }

  const uint64_t seq = publisher.Publish("x");
  publisher.BufferOnly("hidden");
  publisher.Publish("y");
  std::vector<std::string> x = sub.Next();
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(SeqOf(x[1]), seq);
  EXPECT_EQ(x[2], "x");
  std::vector<std::string> y = sub.Next();
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(SeqOf(y[1]), seq + 2);  // the buffer-only batch took seq + 1

  ASSERT_TRUE(publisher.Resend(seq));
  std::vector<std::string> again = sub.Next();
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(SeqOf(again[1]), seq);

  publisher.Restart("e2");
  EXPECT_TRUE(publisher.buffered_seqs().empty());
  EXPECT_EQ(publisher.Publish("z"), 0u);
  std::vector<std::string> z = sub.Next();
  ASSERT_EQ(z.size(), 3u);
  EXPECT_EQ(z[0], "kv\0sgl-kv-epoch=e2"s);
  EXPECT_EQ(SeqOf(z[1]), 0u);

  publisher.SetNextSeq(10);
  EXPECT_EQ(publisher.BufferOnly("w"), 10u);
  EXPECT_EQ(publisher.next_seq(), 11u);
}

TEST(FakeSglangPublisherTest, StopLiveBuffersAndStartLiveRebindsThePort) {
  FakeSglangPublisher publisher;
  zmq::context_t context(1);
  Subscriber sub(context, publisher.pub_endpoint());
  ASSERT_FALSE(sub.ReceiveWhile([&] { publisher.Publish("a"); }).empty());
  while (!sub.Next(200ms).empty()) {
  }

  publisher.StopLive();
  EXPECT_FALSE(publisher.live());
  const uint64_t hidden = publisher.Publish("while down");
  EXPECT_TRUE(sub.Next(300ms).empty());  // buffered, not sent
  EXPECT_EQ(publisher.buffered_seqs().back(), hidden);

  publisher.StartLive();
  EXPECT_TRUE(publisher.live());
  // The SUB reconnects to the same port on its own.
  std::vector<std::string> back =
      sub.ReceiveWhile([&] { publisher.Publish("back"); });
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2], "back");
  EXPECT_GT(SeqOf(back[1]), hidden);
}

TEST(FakeSglangPublisherTest, SubscriptionsTellWhenASubscriberHasJoined) {
  FakeSglangPublisher publisher;
  zmq::context_t context(1);
  EXPECT_EQ(publisher.subscriptions(), 0u);
  Subscriber sub(context, publisher.pub_endpoint());
  ASSERT_TRUE(
      WaitUntil([&] { return publisher.subscriptions() >= 1; }, kBound));
  // Joined: a single send arrives.
  publisher.Publish("once");
  std::vector<std::string> once = sub.Next();
  ASSERT_EQ(once.size(), 3u);
  EXPECT_EQ(once[2], "once");

  // A rebound live socket sees the subscription again. (The SUB resends it
  // only while its owner calls into it, as the bridge's reader always does.)
  const size_t before = publisher.subscriptions();
  publisher.StopLive();
  publisher.StartLive();
  ASSERT_TRUE(WaitUntil(
      [&] {
        EXPECT_TRUE(sub.Next(10ms).empty());
        return publisher.subscriptions() > before;
      },
      kBound));
  publisher.Publish("again");
  std::vector<std::string> again = sub.Next();
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[2], "again");
}

TEST(FakeSglangPublisherTest, SnapshotV1HeaderChunksEndAndBarrier) {
  FakeSglangPublisher::Options options;
  options.topic = "kv";
  options.epoch = "e1";
  options.snapshot = true;
  FakeSglangPublisher publisher(options);
  ASSERT_FALSE(publisher.snapshot_endpoint().empty());
  zmq::context_t context(1);

  std::vector<SnapshotRecord> records;
  for (int64_t h = 1; h <= 4097; ++h) {
    records.push_back(
        {h == 1 ? std::nullopt : std::optional<int64_t>(h - 1), h});
  }
  publisher.SetSnapshotRecords(records);

  zmq::socket_t dealer =
      Ask(context, publisher.snapshot_endpoint(), "snapshot-v1");

  std::vector<std::string> header = Receive(dealer, kBound);
  ASSERT_EQ(header.size(), 3u);
  EXPECT_EQ(header[0], "");
  EXPECT_EQ(header[1], "header");
  msgpack::object_handle h =
      msgpack::unpack(header[2].data(), header[2].size());
  // [1, "e1", 0, 1, 0, "b1", 4097]: the barrier took seq 0.
  std::tuple<int, std::string, int, uint64_t, uint64_t, std::string, uint64_t>
      fields;
  h.get().convert(fields);
  EXPECT_EQ(std::get<0>(fields), 1);
  EXPECT_EQ(std::get<1>(fields), "e1");
  EXPECT_EQ(std::get<2>(fields), 0);
  EXPECT_EQ(std::get<3>(fields), 1u);
  EXPECT_EQ(std::get<4>(fields), 0u);
  EXPECT_EQ(std::get<5>(fields), "b1");
  EXPECT_EQ(std::get<6>(fields), 4097u);

  size_t received = 0;
  std::vector<std::string> frames;
  for (int chunk = 0; chunk < 2; ++chunk) {
    frames = Receive(dealer, kBound);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[1], "chunk");
    msgpack::object_handle c =
        msgpack::unpack(frames[2].data(), frames[2].size());
    std::vector<std::tuple<msgpack::object, std::vector<int64_t>>> rows;
    c.get().convert(rows);
    EXPECT_LE(rows.size(), 4096u);
    for (const auto& [parent, hashes] : rows) {
      ASSERT_EQ(hashes.size(), 1u);
      EXPECT_EQ(hashes[0], records[received].hash);
      if (received == 0) {
        EXPECT_TRUE(parent.is_nil());
      } else {
        EXPECT_EQ(parent.as<int64_t>(), *records[received].parent);
      }
      ++received;
    }
  }
  EXPECT_EQ(received, records.size());
  frames = Receive(dealer, kBound);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[1], "end");
  EXPECT_EQ(frames[2], "");

  // The barrier entered the replay buffer under seq 0; live resumes at 1.
  EXPECT_THAT(publisher.buffered_seqs(), ElementsAre(0));
  EXPECT_EQ(publisher.Publish("next"), 1u);
  EXPECT_EQ(publisher.snapshot_requests(), 1u);
  EXPECT_EQ(publisher.BarrierTopic("b1"),
            "kv\0sgl-kv-epoch=e1\0sgl-kv-snapshot=b1"s);

  publisher.SetSnapshotError("snapshot provider busy");
  dealer.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(std::string("snapshot-v1")), zmq::send_flags::none);
  frames = Receive(dealer, kBound);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[1], "error");
  EXPECT_EQ(frames[2], "snapshot provider busy");
  EXPECT_EQ(publisher.snapshot_requests(), 2u);
}

TEST(FakeSglangPublisherTest, SnapshotBarrierIsPublishedLive) {
  FakeSglangPublisher::Options options;
  options.epoch = "e1";
  options.snapshot = true;
  FakeSglangPublisher publisher(options);
  zmq::context_t context(1);
  Subscriber sub(context, publisher.pub_endpoint());
  ASSERT_FALSE(sub.ReceiveWhile([&] { publisher.Publish("join"); }).empty());
  while (!sub.Next(200ms).empty()) {
  }

  zmq::socket_t dealer =
      Ask(context, publisher.snapshot_endpoint(), "snapshot-v1");
  std::vector<std::string> barrier = sub.Next();
  ASSERT_EQ(barrier.size(), 3u);
  EXPECT_EQ(barrier[0], publisher.BarrierTopic("b1"));
  EXPECT_EQ(barrier[2], PackBatch({}));
  EXPECT_EQ(SeqOf(barrier[1]) + 1, publisher.next_seq());
}

// The bridge's own clients accept what the fake sends (and notice its
// faults), so the recovery e2e tests exercise the bridge, not a protocol
// mismatch.
TEST(FakeSglangPublisherTest, BridgeReplayClientReadsTheFake) {
  FakeSglangPublisher publisher;
  zmq::context_t context(1);
  for (int i = 0; i < 4; ++i) publisher.BufferOnly("p" + std::to_string(i));
  ReplayClient client(&context, publisher.replay_endpoint(), nullptr);

  ReplayResult all = client.Replay(1, std::nullopt);
  EXPECT_TRUE(all.complete) << all.problem;
  ASSERT_EQ(all.batches.size(), 3u);
  EXPECT_EQ(all.batches[0].seq, 1u);
  EXPECT_EQ(all.batches[2].payload, "p3");

  publisher.OmitFromReplay(2);
  ReplayResult holed = client.Replay(0, std::nullopt);
  EXPECT_FALSE(holed.complete);
  // The hole after 1 is asked for again, and the answer still skips it.
  EXPECT_THAT(publisher.replay_starts(), ElementsAre(1, 0, 2));
}

// SGLang's replay ROUTER keeps at most 64 replies queued to a client and
// drops the rest: a plain client asking for 3,000 batches gets a run from
// the start, then holes, and rarely the END marker.
TEST(FakeSglangPublisherTest, ReplayDropsWhatDoesNotFitSixtyFourQueued) {
  FakeSglangPublisher publisher;
  zmq::context_t context(1);
  const std::string payload(1000, 'x');
  for (int i = 0; i < 3'000; ++i) publisher.BufferOnly(payload);
  zmq::socket_t dealer = Ask(context, publisher.replay_endpoint(), SeqFrame(0));
  std::vector<uint64_t> seqs;
  bool ended = false;
  // The publisher sends in one burst: a quiet second means it is done.
  while (true) {
    std::vector<std::string> frames =
        Receive(dealer, seqs.empty() ? kBound : 1000ms);
    if (frames.size() != 3) break;
    if (frames[1] == std::string(8, '\xff')) {
      ended = true;
      break;
    }
    seqs.push_back(SeqOf(frames[1]));
  }
  ASSERT_GE(seqs.size(), 64u);
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ(seqs[i], i);
  EXPECT_LT(seqs.size(), 3'000u) << "nothing was dropped";
  EXPECT_FALSE(ended && seqs.size() == 3'000u);
}

// The bridge's client pages through those drops: every batch, in order,
// in more than one request.
TEST(FakeSglangPublisherTest, BridgeReplayClientPagesThroughTheDrops) {
  FakeSglangPublisher publisher;
  zmq::context_t context(1);
  const std::string payload(1000, 'x');
  for (int i = 0; i < 3'000; ++i) publisher.BufferOnly(payload);
  ReplayClient client(&context, publisher.replay_endpoint(), nullptr);
  ReplayResult all = client.Replay(0, std::nullopt);
  ASSERT_TRUE(all.complete) << all.problem;
  ASSERT_EQ(all.batches.size(), 3'000u);
  for (size_t i = 0; i < all.batches.size(); ++i) {
    ASSERT_EQ(all.batches[i].seq, i);
  }
  EXPECT_GT(all.pages, 1u);
  EXPECT_EQ(publisher.replay_starts().size(), all.pages);
}

TEST(FakeSglangPublisherTest, BridgeSnapshotClientReadsTheFake) {
  FakeSglangPublisher::Options options;
  options.epoch = "e1";
  options.snapshot = true;
  FakeSglangPublisher publisher(options);
  zmq::context_t context(1);
  publisher.Publish(PackBatch({StoreEvent({1, 2}, "GPU", 16),
                               StoreEvent({2}, "CPU_PINNED", 16),
                               StoreEvent({3}, "EXTERNAL", 16)}));
  SnapshotClient client(&context, publisher.snapshot_endpoint(),
                        /*replica_rank=*/0, nullptr);

  absl::StatusOr<PublisherSnapshot> snapshot = client.Fetch();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->version, 2u);
  EXPECT_EQ(snapshot->epoch, "e1");
  EXPECT_EQ(snapshot->barrier_seq, 1u);
  EXPECT_EQ(snapshot->resume_seq, 2u);
  EXPECT_EQ(snapshot->barrier_id, "b1");
  EXPECT_THAT(snapshot->blocks,
              ElementsAre(SnapshotBlock{1, Tier::kHbm, 1, 16},
                          SnapshotBlock{2, Tier::kHbm, 1, 16},
                          SnapshotBlock{2, Tier::kDram, 1, 16}));

  SnapshotClient v1_client(&context, publisher.snapshot_endpoint(), 0, nullptr,
                           kSnapshotFetchTimeout, SnapshotProtocol::kV1);
  snapshot = v1_client.Fetch();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->version, 1u);
  EXPECT_THAT(snapshot->hashes, ElementsAre(1, 2, 3));
  publisher.SetSnapshotRecords({{std::nullopt, 7}});
  snapshot = v1_client.Fetch();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(snapshot->hashes, ElementsAre(7));

  publisher.SetSnapshotError("snapshot provider busy");
  absl::StatusOr<PublisherSnapshot> failed = client.Fetch();
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()),
              ::testing::HasSubstr("snapshot provider busy"));
}

// A v1-only fake refuses snapshot-v2 as an old SGLang does; the bridge's
// client (auto) then reads snapshot-v1, with the alternate v2 key names
// irrelevant.
TEST(FakeSglangPublisherTest, V1OnlyFakeRefusesV2AndTheClientFallsBack) {
  FakeSglangPublisher::Options options;
  options.epoch = "e1";
  options.snapshot = true;
  options.snapshot_protocols = FakeSglangPublisher::SnapshotProtocols::kV1Only;
  FakeSglangPublisher publisher(options);
  publisher.Publish(PackBatch({StoreEvent({5}, "DISK")}));
  zmq::context_t context(1);

  zmq::socket_t dealer =
      Ask(context, publisher.snapshot_endpoint(), "snapshot-v2");
  std::vector<std::string> refusal = Receive(dealer, kBound);
  EXPECT_THAT(refusal, ElementsAre("", "error", "invalid snapshot-v1 request"));
  EXPECT_EQ(publisher.refused_snapshot_requests(), 1u);
  EXPECT_EQ(publisher.snapshot_requests(), 0u);
  // No capture, no barrier.
  EXPECT_EQ(publisher.next_seq(), 1u);

  SnapshotClient client(&context, publisher.snapshot_endpoint(), 0, nullptr);
  absl::StatusOr<PublisherSnapshot> snapshot = client.Fetch();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->version, 1u);
  EXPECT_THAT(snapshot->hashes, ElementsAre(5));
  EXPECT_EQ(publisher.refused_snapshot_requests(), 2u);
  EXPECT_EQ(publisher.snapshot_requests(), 1u);
}

// The mirrors, from the fake's own payloads: v1 keyed by hash over every
// medium, v2 keyed by (hash, tier) over GPU, CPU_PINNED and DISK; removes
// at one medium, EXTERNAL, clears, re-stores in place, parents chained
// through a multi-hash store, component labels, map-form events.
TEST(SnapshotMirrorTest, V1AndV2Semantics) {
  SnapshotMirror mirror;
  mirror.Apply(
      PackBatch({StoreEvent({1, 2}, "GPU", 16),
                 StoreEvent({2, 3}, "CPU_PINNED", 16, Labels({"swa"})),
                 StoreEvent({4}, "DISK", 8), StoreEvent({5}, "EXTERNAL", 16),
                 StoreEvent({6}, std::nullopt, 16)}));
  // 2's re-store at CPU_PINNED updates its v1 record in place (parent nil).
  EXPECT_THAT(mirror.V1(),
              ElementsAre(SnapshotRecord{std::nullopt, 1},
                          SnapshotRecord{std::nullopt, 2}, SnapshotRecord{2, 3},
                          SnapshotRecord{std::nullopt, 4},
                          SnapshotRecord{std::nullopt, 5},
                          SnapshotRecord{std::nullopt, 6}));
  EXPECT_THAT(mirror.V2(),
              ElementsAre(SnapshotV2Record{std::nullopt, 1, 1, 1, 16},
                          SnapshotV2Record{1, 2, 1, 1, 16},
                          SnapshotV2Record{std::nullopt, 2, 2, 2, 16},
                          SnapshotV2Record{2, 3, 2, 2, 16},
                          SnapshotV2Record{std::nullopt, 4, 3, 1, 8}));

  // A remove at one medium: v1 drops the hash, v2 only that tier. An
  // EXTERNAL remove touches v1 only. A re-store updates in place.
  mirror.Apply(
      PackBatch({RemoveEvent({2}, "GPU"), RemoveEvent({1}, "EXTERNAL"),
                 RemoveEvent({5}, "EXTERNAL"),
                 StoreEvent({4}, "DISK", 32, Labels({"full", "mamba"}))}));
  EXPECT_THAT(mirror.V1(),
              ElementsAre(SnapshotRecord{2, 3}, SnapshotRecord{std::nullopt, 4},
                          SnapshotRecord{std::nullopt, 6}));
  EXPECT_THAT(mirror.V2(),
              ElementsAre(SnapshotV2Record{std::nullopt, 1, 1, 1, 16},
                          SnapshotV2Record{std::nullopt, 2, 2, 2, 16},
                          SnapshotV2Record{2, 3, 2, 2, 16},
                          SnapshotV2Record{std::nullopt, 4, 3, 5, 32}));

  // Map-form (E4) events; then a clear empties both.
  mirror.Apply(Pack(Batch({Mp(MpMap{{Mp("type"), Mp("BlockStored")},
                                    {Mp("block_hashes"), Hashes({9})},
                                    {Mp("parent_block_hash"), Mp(4)},
                                    {Mp("block_size"), Mp(4)},
                                    {Mp("medium"), Mp("GPU")}})})));
  EXPECT_EQ(mirror.V2().back(), (SnapshotV2Record{4, 9, 1, 1, 4}));
  EXPECT_EQ(mirror.V1().back(), (SnapshotRecord{4, 9}));
  mirror.Apply(PackBatch({ClearEvent(), StoreEvent({7}, "DISK", 4)}));
  EXPECT_THAT(mirror.V1(), ElementsAre(SnapshotRecord{std::nullopt, 7}));
  EXPECT_THAT(mirror.V2(),
              ElementsAre(SnapshotV2Record{std::nullopt, 7, 3, 1, 4}));
  // Not a batch: ignored.
  mirror.Apply("not msgpack \xc1");
  EXPECT_EQ(mirror.V1().size(), 1u);
}

// snapshot-v2 frames as SGLang sends them: a header map, record maps in
// chunks of <= 4,096, an empty end; the barrier as for v1. The mirror is
// kept from published and buffered-only batches alike, and a restart
// clears it.
TEST(FakeSglangPublisherTest, SnapshotV2HeaderChunksEnd) {
  FakeSglangPublisher::Options options;
  options.epoch = "e1";
  options.snapshot = true;
  options.replica_rank = 3;
  FakeSglangPublisher publisher(options);
  std::vector<int64_t> hashes;
  for (int64_t h = 1; h <= 4097; ++h) hashes.push_back(h);
  publisher.BufferOnly(PackBatch({StoreEvent(hashes, "GPU", 1)}));
  publisher.Publish(PackBatch({StoreEvent({1}, "CPU_PINNED", 1)}));
  ASSERT_EQ(publisher.SnapshotV2Mirror().size(), 4098u);
  ASSERT_EQ(publisher.SnapshotV1Mirror().size(), 4097u);
  zmq::context_t context(1);

  zmq::socket_t dealer =
      Ask(context, publisher.snapshot_endpoint(), "snapshot-v2");

  std::vector<std::string> header = Receive(dealer, kBound);
  ASSERT_EQ(header.size(), 3u);
  EXPECT_EQ(header[1], "header");
  msgpack::object_handle h =
      msgpack::unpack(header[2].data(), header[2].size());
  std::map<std::string, msgpack::object> fields;
  h.get().convert(fields);
  EXPECT_EQ(fields.at("version").as<int>(), 2);
  EXPECT_EQ(fields.at("dp_rank").as<int>(), 3);
  EXPECT_EQ(fields.at("worker_epoch").as<std::string>(), "e1");
  EXPECT_EQ(fields.at("barrier_seq").as<uint64_t>(), 2u);
  EXPECT_EQ(fields.at("resume_seq").as<uint64_t>(), 3u);
  EXPECT_EQ(fields.at("barrier_id").as<std::string>(), "b1");
  EXPECT_EQ(fields.at("record_count").as<uint64_t>(), 4098u);
  for (const char* key :
       {"namespace", "model", "worker_id", "hash_schema_version", "page_size",
        "is_bigram", "cache_spec"}) {
    EXPECT_EQ(fields.count(key), 1u) << key;
  }

  std::vector<std::map<std::string, msgpack::object>> records;
  std::vector<msgpack::object_handle> handles;
  std::vector<std::string> frames;
  for (int chunk = 0; chunk < 2; ++chunk) {
    frames = Receive(dealer, kBound);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[1], "chunk");
    handles.push_back(msgpack::unpack(frames[2].data(), frames[2].size()));
    std::vector<std::map<std::string, msgpack::object>> rows;
    handles.back().get().convert(rows);
    EXPECT_LE(rows.size(), 4096u);
    records.insert(records.end(), rows.begin(), rows.end());
  }
  ASSERT_EQ(records.size(), 4098u);
  EXPECT_EQ(records[0].at("block_hash").as<int64_t>(), 1);
  EXPECT_TRUE(records[0].at("parent_block_hash").is_nil());
  EXPECT_EQ(records[1].at("parent_block_hash").as<int64_t>(), 1);
  EXPECT_EQ(records[4097].at("block_hash").as<int64_t>(), 1);
  EXPECT_EQ(records[4097].at("tier").as<int>(), 2);
  EXPECT_EQ(records[4097].at("component_mask").as<int>(), 1);
  EXPECT_EQ(records[4097].at("block_size").as<int>(), 1);
  frames = Receive(dealer, kBound);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[1], "end");
  EXPECT_EQ(frames[2], "");
  EXPECT_THAT(publisher.buffered_seqs(), ElementsAre(0, 1, 2));

  publisher.Restart("e2");
  EXPECT_TRUE(publisher.SnapshotV1Mirror().empty());
  EXPECT_TRUE(publisher.SnapshotV2Mirror().empty());
}

// The other upstream spelling of the v2 header, read by the bridge.
TEST(FakeSglangPublisherTest, V2AlternateKeysReadByTheClient) {
  FakeSglangPublisher::Options options;
  options.epoch = "e1";
  options.snapshot = true;
  options.replica_rank = 1;
  options.v2_alternate_keys = true;
  FakeSglangPublisher publisher(options);
  publisher.Publish(PackBatch({StoreEvent({8}, "DISK", 2)}));
  zmq::context_t context(1);
  SnapshotClient client(&context, publisher.snapshot_endpoint(), 1, nullptr,
                        kSnapshotFetchTimeout, SnapshotProtocol::kV2);
  absl::StatusOr<PublisherSnapshot> snapshot = client.Fetch();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(snapshot->blocks,
              ElementsAre(SnapshotBlock{8, Tier::kSsd, 1, 2}));
}

}  // namespace
}  // namespace kvindexer::bridge::testing
