// Framing (B14, P2), sequence tracking, status classes (B9), backoff,
// shutdown signal and stats.
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bridge/backoff.h"
#include "bridge/bridge_stats.h"
#include "bridge/frame_parser.h"
#include "bridge/log_throttle.h"
#include "bridge/status_classifier.h"
#include "bridge/stop_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/msgpack_builders.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::SeqFrame;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(FrameParser, B14TwoAndThreeFrames) {
  const std::string seq = SeqFrame(42);
  std::vector<std::string_view> three = {"kv-events", seq, "payload"};
  auto m3 = ParseLiveMessage(three);
  ASSERT_TRUE(m3.ok());
  EXPECT_EQ(m3->seq, 42u);
  EXPECT_EQ(m3->topic, "kv-events");
  EXPECT_EQ(m3->payload, "payload");
  std::vector<std::string_view> two = {seq, "payload"};
  auto m2 = ParseLiveMessage(two);
  ASSERT_TRUE(m2.ok());
  EXPECT_EQ(m2->seq, 42u);
  EXPECT_EQ(m2->payload, "payload");
}

TEST(FrameParser, B14BadShapes) {
  const std::string seq = SeqFrame(1);
  std::vector<std::string_view> one = {seq};
  EXPECT_THAT(std::string(ParseLiveMessage(one).status().message()),
              HasSubstr("1 frames"));
  std::vector<std::string_view> four = {"t", seq, "p", "x"};
  EXPECT_FALSE(ParseLiveMessage(four).ok());
  std::vector<std::string_view> none;
  EXPECT_FALSE(ParseLiveMessage(none).ok());
  const std::string short_seq("\x00\x00\x00\x2a", 4);
  std::vector<std::string_view> bad = {"t", short_seq, "p"};
  EXPECT_THAT(std::string(ParseLiveMessage(bad).status().message()),
              HasSubstr("4 bytes"));
  std::vector<std::string_view> bad2 = {short_seq, "p"};
  EXPECT_FALSE(ParseLiveMessage(bad2).ok());
}

TEST(FrameParser, BigEndianAndAllOnes) {
  const std::string seq("\x01\x02\x03\x04\x05\x06\x07\x08", 8);
  std::vector<std::string_view> frames = {"", seq, ""};
  EXPECT_EQ(ParseLiveMessage(frames)->seq, 0x0102030405060708ull);
  const std::string ones(8, '\xff');
  std::vector<std::string_view> frames2 = {ones, "p"};
  EXPECT_EQ(ParseLiveMessage(frames2)->seq, ~uint64_t{0});
}

TEST(FrameParser, P2EpochTopicAccepted) {
  const std::string topic = std::string("kv-events") + '\0' +
                            "sgl-kv-epoch=0123456789abcdef0123456789abcdef";
  const std::string barrier = topic + '\0' + "sgl-kv-snapshot=7";
  const std::string seq = SeqFrame(5);
  for (const std::string& t : {topic, barrier}) {
    std::vector<std::string_view> frames = {t, seq, "x"};
    auto m = ParseLiveMessage(frames);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->topic, t);
    EXPECT_EQ(m->seq, 5u);
  }
}

TEST(LogThrottle, FirstThenPerInterval) {
  LogThrottle throttle(1s);
  auto t = LogThrottle::Clock::now();
  EXPECT_EQ(throttle.Allow(t), 0u);
  EXPECT_EQ(throttle.Allow(t + 10ms), std::nullopt);
  EXPECT_EQ(throttle.Allow(t + 20ms), std::nullopt);
  EXPECT_EQ(throttle.Allow(t + 1s), 2u);
}

TEST(StatusClassifier, B9PermanentCodes) {
  for (auto code :
       {absl::StatusCode::kInvalidArgument,
        absl::StatusCode::kFailedPrecondition, absl::StatusCode::kNotFound,
        absl::StatusCode::kAlreadyExists, absl::StatusCode::kOutOfRange,
        absl::StatusCode::kUnauthenticated, absl::StatusCode::kPermissionDenied,
        absl::StatusCode::kUnimplemented, absl::StatusCode::kDataLoss}) {
    EXPECT_TRUE(IsPermanentStatus(code)) << static_cast<int>(code);
  }
  for (auto code :
       {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
        absl::StatusCode::kResourceExhausted, absl::StatusCode::kInternal,
        absl::StatusCode::kUnknown, absl::StatusCode::kCancelled,
        absl::StatusCode::kAborted, absl::StatusCode::kOk}) {
    EXPECT_FALSE(IsPermanentStatus(code)) << static_cast<int>(code);
  }
}

TEST(Backoff, DoublesToCapAndResets) {
  Backoff backoff;
  std::vector<int64_t> delays;
  for (int i = 0; i < 8; ++i) delays.push_back(backoff.NextDelay().count());
  EXPECT_EQ(delays, (std::vector<int64_t>{500, 1000, 2000, 4000, 8000, 10000,
                                          10000, 10000}));
  backoff.Reset();
  EXPECT_EQ(backoff.NextDelay().count(), 500);
}

TEST(StopRequest, WaitIsInterruptedAndCancellerRuns) {
  StopRequest signal;
  EXPECT_FALSE(signal.WaitFor(1ms));
  bool cancelled = false;
  signal.SetCanceller([&cancelled] { cancelled = true; });
  std::thread trigger([&signal] { signal.Trigger(); });
  // True only when the wait ended because of Trigger(), not its bound.
  EXPECT_TRUE(signal.WaitFor(30s));
  trigger.join();
  EXPECT_TRUE(cancelled);
  EXPECT_TRUE(signal.triggered());
  // A canceller installed after shutdown runs at once.
  bool late = false;
  signal.SetCanceller([&late] { late = true; });
  EXPECT_TRUE(late);
}

TEST(BridgeStats, LineListsCountersAndNonZeroReasons) {
  BridgeStats stats;
  stats.batches_received = 3;
  stats.rpcs_failed = 1;
  stats.CountSkippedEvent(EventSkipReason::kUnknownMedium);
  stats.CountSkippedEvent(EventSkipReason::kUnknownMedium);
  stats.CountSkippedMessage(MessageSkipReason::kSeqLength);
  const std::string line = stats.FormatLine();
  EXPECT_THAT(line, HasSubstr("batches=3"));
  EXPECT_THAT(line, HasSubstr("rpcs_failed=1"));
  EXPECT_THAT(line, HasSubstr("events_skipped{unknown_medium=2}"));
  EXPECT_THAT(line, HasSubstr("messages_skipped{seq_length=1}"));
}

// "Recovery > Stats": the resync total, its three kinds (always listed) and
// the heartbeat counters.
TEST(BridgeStats, LineListsResyncKindsAndHeartbeats) {
  BridgeStats stats;
  stats.resyncs = 6;
  stats.resyncs_snapshot = 1;
  stats.resyncs_replay_fold = 2;
  stats.resyncs_degraded = 0;
  stats.heartbeats = 7;
  stats.heartbeat_probe_failures = 3;
  const std::string line = stats.FormatLine();
  EXPECT_THAT(line, HasSubstr(" resyncs=6 "));
  EXPECT_THAT(line,
              HasSubstr(" resyncs{snapshot=1,replay_fold=2,degraded=0} "));
  EXPECT_THAT(line, HasSubstr(" heartbeats=7 "));
  EXPECT_THAT(line, HasSubstr(" heartbeat_probe_failures=3"));
}

}  // namespace
}  // namespace kvindexer::bridge
