// LiveReader against an in-test PUB socket on loopback: batches in order,
// topic prefix, END marker skipped, malformed messages, and the
// disconnect/connect markers when the publisher goes away and comes back.
// ZMQ drops what a PUB sends before the subscription reaches it, so each
// test first publishes probe messages until one arrives (bounded), instead
// of sleeping.
#include "bridge/live_reader.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "bridge/live_buffer.h"
#include "bridge/tests/zmq_test_sockets.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::BindLoopback;
using ::kvindexer::bridge::testing::SendFrames;
using ::kvindexer::bridge::testing::SeqBytes;
using namespace std::chrono_literals;
using namespace std::string_literals;

constexpr char kTopic[] = "kv";
constexpr char kProbe[] = "probe";

class LiveReaderTest : public ::testing::Test {
 protected:
  LiveReaderTest() : pub_(context_, zmq::socket_type::pub), buffer_(1024) {
    pub_.set(zmq::sockopt::linger, 0);
    endpoint_ = BindLoopback(pub_);
  }
  ~LiveReaderTest() override { reader_->Stop(); }

  void StartReader() {
    reader_ =
        std::make_unique<LiveReader>(&context_, endpoint_, kTopic, &buffer_);
    ASSERT_TRUE(reader_->Start().ok());
  }

  // Publishes probes until one is received; earlier items must be
  // kConnected markers. Later probe copies are skipped by NextItem().
  void WaitUntilSubscribed() {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      SendFrames(pub_, {kTopic, SeqBytes(999), kProbe});
      std::optional<LiveItem> item = buffer_.Pop(10ms);
      while (item.has_value()) {
        if (item->kind == LiveItem::Kind::kBatch &&
            item->batch.payload == kProbe) {
          return;
        }
        EXPECT_EQ(item->kind, LiveItem::Kind::kConnected);
        item = buffer_.Pop(0ms);
      }
    }
    FAIL() << "the reader never received a probe";
  }

  // The next item that is not a probe.
  LiveItem NextItem() {
    while (true) {
      std::optional<LiveItem> item = buffer_.Pop(2s);
      if (!item.has_value()) {
        ADD_FAILURE() << "no item within 2 s";
        return LiveItem{};
      }
      if (item->kind == LiveItem::Kind::kBatch &&
          item->batch.payload == kProbe) {
        continue;
      }
      return *std::move(item);
    }
  }

  zmq::context_t context_;
  zmq::socket_t pub_;
  std::string endpoint_;
  LiveBuffer buffer_;
  std::unique_ptr<LiveReader> reader_;
};

TEST_F(LiveReaderTest, BatchesInOrderEndMarkerSkipped) {
  StartReader();
  WaitUntilSubscribed();
  const std::string epoch_topic = "kv\0sgl-kv-epoch=e1"s;
  SendFrames(pub_, {kTopic, SeqBytes(5), "five"});
  SendFrames(pub_, {"other", SeqBytes(50), "not subscribed"});
  SendFrames(pub_, {epoch_topic, SeqBytes(6), "six"});
  SendFrames(pub_, {kTopic, SeqBytes(~uint64_t{0}), ""});  // live END
  SendFrames(pub_, {kTopic, SeqBytes(7), "seven"});

  LiveItem five = NextItem();
  ASSERT_EQ(five.kind, LiveItem::Kind::kBatch);
  EXPECT_EQ(five.batch.seq, 5u);
  EXPECT_EQ(five.batch.topic, kTopic);
  EXPECT_EQ(five.batch.payload, "five");
  LiveItem six = NextItem();
  ASSERT_EQ(six.kind, LiveItem::Kind::kBatch);
  EXPECT_EQ(six.batch.seq, 6u);
  EXPECT_EQ(six.batch.topic, epoch_topic);
  LiveItem seven = NextItem();
  ASSERT_EQ(seven.kind, LiveItem::Kind::kBatch);
  EXPECT_EQ(seven.batch.seq, 7u);
  EXPECT_EQ(seven.batch.payload, "seven");
  EXPECT_EQ(reader_->stats().end_markers, 1u);
}

TEST_F(LiveReaderTest, MalformedMessagesBecomeMarkers) {
  StartReader();
  WaitUntilSubscribed();
  SendFrames(pub_, {"kv-one-frame"});
  SendFrames(pub_, {kTopic, "\x00\x00\x00\x01"s, "short seq"});
  SendFrames(pub_, {kTopic, SeqBytes(8), "eight"});

  // The two malformed messages arrive as one marker or two, depending on
  // whether the reader queued the second before this test popped the first
  // (consecutive markers merge); either way both are counted, in order.
  LiveItem first = NextItem();
  ASSERT_EQ(first.kind, LiveItem::Kind::kMalformed);
  EXPECT_EQ(first.frame_count, 1u);
  EXPECT_FALSE(first.detail.empty());
  uint64_t malformed = first.malformed;
  uint64_t seq_length = first.malformed_seq_length;
  LiveItem next = NextItem();
  if (next.kind == LiveItem::Kind::kMalformed) {
    EXPECT_EQ(next.frame_count, 3u);
    malformed += next.malformed;
    seq_length += next.malformed_seq_length;
    next = NextItem();
  }
  EXPECT_EQ(malformed, 2u);
  EXPECT_EQ(seq_length, 1u);
  ASSERT_EQ(next.kind, LiveItem::Kind::kBatch);
  EXPECT_EQ(next.batch.seq, 8u);
  EXPECT_EQ(reader_->stats().malformed, 2u);
}

TEST_F(LiveReaderTest, DisconnectAndReconnectMarkers) {
  StartReader();
  WaitUntilSubscribed();
  SendFrames(pub_, {kTopic, SeqBytes(1), "before"});
  LiveItem before = NextItem();
  ASSERT_EQ(before.kind, LiveItem::Kind::kBatch);
  EXPECT_EQ(before.batch.seq, 1u);

  pub_.close();
  EXPECT_EQ(NextItem().kind, LiveItem::Kind::kDisconnected);

  // Re-bind the same port; the old listener may take a moment to go away.
  pub_ = zmq::socket_t(context_, zmq::socket_type::pub);
  pub_.set(zmq::sockopt::linger, 0);
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (true) {
    try {
      pub_.bind(endpoint_);
      break;
    } catch (const zmq::error_t& e) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << e.what();
      std::this_thread::yield();
    }
  }
  EXPECT_EQ(NextItem().kind, LiveItem::Kind::kConnected);
  WaitUntilSubscribed();
  SendFrames(pub_, {kTopic, SeqBytes(0), "after"});
  LiveItem after = NextItem();
  ASSERT_EQ(after.kind, LiveItem::Kind::kBatch);
  EXPECT_EQ(after.batch.seq, 0u);
  EXPECT_EQ(reader_->stats().disconnects, 1u);
}

// A ZMQ error ends the thread with a kReaderFailed item naming it.
TEST_F(LiveReaderTest, ZmqErrorQueuesReaderFailed) {
  StartReader();
  WaitUntilSubscribed();
  pub_.close();
  context_.shutdown();  // every later poll fails with ETERM
  while (true) {
    LiveItem item = NextItem();
    if (item.kind == LiveItem::Kind::kDisconnected) continue;
    ASSERT_EQ(item.kind, LiveItem::Kind::kReaderFailed);
    EXPECT_FALSE(item.detail.empty());
    break;
  }
}

TEST_F(LiveReaderTest, StopIsPrompt) {
  StartReader();
  const auto start = std::chrono::steady_clock::now();
  reader_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 200ms);
  reader_->Stop();  // idempotent
}

TEST(LiveReader, UnusableEndpointIsUnavailable) {
  zmq::context_t context;
  LiveBuffer buffer(4);
  LiveReader reader(&context, "not-an-endpoint", "", &buffer);
  absl::Status status = reader.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kvindexer::bridge
