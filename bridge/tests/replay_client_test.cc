// ReplayClient against an in-test ROUTER that plays SGLang's replay socket.
#include "bridge/replay_client.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "bridge/stop_request.h"
#include "bridge/tests/zmq_test_sockets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace replay_client_test {
namespace {

using ::kvindexer::bridge::testing::FakeRouter;
using ::kvindexer::bridge::testing::ReceiveFrames;
using ::kvindexer::bridge::testing::SendFrames;
using ::kvindexer::bridge::testing::SeqBytes;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using namespace std::string_literals;

const std::string kEnd = SeqBytes(~uint64_t{0});

// One scripted reply, without the identity frame.
using Reply = std::vector<std::string>;

Reply Batch(uint64_t seq) {
  return {"", SeqBytes(seq), "p" + std::to_string(seq)};
}
Reply End() { return {"", kEnd, ""}; }

std::vector<Reply> Batches(uint64_t first, uint64_t last) {
  std::vector<Reply> out;
  for (uint64_t seq = first; seq <= last; ++seq) out.push_back(Batch(seq));
  return out;
}

class ReplayClientTest : public ::testing::Test {
 protected:
  // Serves one request: checks its frames, records the start, sends
  // `replies` to the requester.
  void ServeOnce(std::vector<Reply> replies) { ServePages({replies}); }

  // Serves one request per entry of `pages`, in order, each answered with
  // its replies (a page SGLang's ROUTER cut short).
  void ServePages(std::vector<std::vector<Reply>> pages) {
    router_.Serve([this, pages = std::move(pages)](zmq::socket_t& router) {
      for (const std::vector<Reply>& replies : pages) {
        std::optional<std::vector<std::string>> request =
            ReceiveFrames(router, 2s);
        ASSERT_TRUE(request.has_value());
        ASSERT_EQ(request->size(), 3u);
        EXPECT_EQ((*request)[1], "");
        ASSERT_EQ((*request)[2].size(), 8u);
        requested_starts_.push_back((*request)[2]);
        requested_start_ = (*request)[2];
        for (const Reply& reply : replies) {
          std::vector<std::string> frames = {(*request)[0]};
          frames.insert(frames.end(), reply.begin(), reply.end());
          SendFrames(router, frames);
        }
      }
    });
  }

  ReplayResult Replay(uint64_t start,
                      std::chrono::milliseconds timeout = 2000ms,
                      std::chrono::milliseconds page_idle = 200ms,
                      std::optional<uint64_t> through = std::nullopt) {
    ReplayClient client(&context_, router_.endpoint(), &shutdown_, timeout,
                        page_idle);
    ReplayResult result = client.Replay(start, through);
    router_.Join();
    return result;
  }

  static std::vector<uint64_t> Seqs(const ReplayResult& result) {
    std::vector<uint64_t> seqs;
    for (const LiveBatch& batch : result.batches) seqs.push_back(batch.seq);
    return seqs;
  }

  zmq::context_t context_;
  StopRequest shutdown_;
  FakeRouter router_;
  std::string requested_start_;
  std::vector<std::string> requested_starts_;
};

TEST_F(ReplayClientTest, FullReply) {
  std::vector<Reply> replies = Batches(0, 2);
  replies.push_back(End());
  ServeOnce(replies);
  ReplayResult result = Replay(0);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_TRUE(result.problem.empty());
  EXPECT_EQ(requested_start_, SeqBytes(0));
  EXPECT_EQ(Seqs(result), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(result.batches[1].payload, "p1");
  EXPECT_TRUE(result.batches[1].topic.empty());
}

TEST_F(ReplayClientTest, EvictedStartIsCompleteFromLaterSeq) {
  std::vector<Reply> replies = Batches(5, 7);
  replies.push_back(End());
  ServeOnce(replies);
  ReplayResult result = Replay(3);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_EQ(requested_start_, SeqBytes(3));
  EXPECT_EQ(Seqs(result), (std::vector<uint64_t>{5, 6, 7}));
}

TEST_F(ReplayClientTest, EndAtOnceIsCompleteAndEmpty) {
  ServeOnce({End()});
  ReplayResult result = Replay(0x0102030405060708);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_TRUE(result.batches.empty());
  EXPECT_EQ(requested_start_, "\x01\x02\x03\x04\x05\x06\x07\x08");
}

TEST_F(ReplayClientTest, AHoleIsFilledByAskingAgainAfterTheRun) {
  // What SGLang's ROUTER does beyond its 64 queued messages: later replies
  // arrive, some in between (and the END marker) are dropped.
  ServePages({{Batch(1), Batch(2), Batch(4), End()},
              {Batch(3), Batch(4), Batch(6)},
              {Batch(5), Batch(6), End()}});
  ReplayResult result = Replay(1);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_TRUE(result.problem.empty());
  EXPECT_EQ(Seqs(result), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(result.pages, 3u);
  EXPECT_EQ(requested_starts_,
            (std::vector<std::string>{SeqBytes(1), SeqBytes(3), SeqBytes(5)}));
}

TEST_F(ReplayClientTest, ATailDroppedWithItsEndIsAskedForAgain) {
  ServePages({Batches(0, 63), {Batch(64), End()}});
  ReplayResult result = Replay(0);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_EQ(result.batches.size(), 65u);
  EXPECT_EQ(result.pages, 2u);
  EXPECT_EQ(requested_starts_.back(), SeqBytes(64));
}

TEST_F(ReplayClientTest, AReplayThroughASeqStopsThere) {
  // No END and no silence to wait for: it stops at seq 5.
  ServePages({Batches(3, 9)});
  const auto begin = std::chrono::steady_clock::now();
  ReplayResult result = Replay(3, 5000ms, 5000ms, /*through=*/5);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 2s);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_EQ(Seqs(result), (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(result.pages, 1u);
}

TEST_F(ReplayClientTest, ALaterPageThatNoLongerStartsThereIsIncomplete) {
  // The publisher evicted seq 3 between the two requests (or never sends
  // it): the run cannot be continued.
  ServePages({{Batch(1), Batch(2), Batch(4), End()}, {Batch(4), End()}});
  ReplayResult result = Replay(1);
  EXPECT_FALSE(result.complete);
  EXPECT_THAT(result.problem, HasSubstr("hole"));
  EXPECT_THAT(result.problem, HasSubstr("4 after 2"));
  EXPECT_EQ(Seqs(result), (std::vector<uint64_t>{1, 2}));
}

TEST_F(ReplayClientTest, ReplyBelowStartIsIncomplete) {
  ServeOnce({Batch(1), End()});
  ReplayResult result = Replay(2);
  EXPECT_FALSE(result.complete);
  EXPECT_THAT(result.problem, HasSubstr("below"));
}

TEST_F(ReplayClientTest, NoReplyIsIncompleteAfterTheReplyTimeout) {
  // The first page's tail is dropped; the second request goes unanswered.
  ServePages({Batches(0, 1), {}});
  const auto begin = std::chrono::steady_clock::now();
  ReplayResult result = Replay(0, 150ms, 50ms);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s);
  EXPECT_FALSE(result.complete);
  EXPECT_THAT(result.problem, HasSubstr("no reply within 150 ms"));
  EXPECT_EQ(Seqs(result), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(requested_starts_,
            (std::vector<std::string>{SeqBytes(0), SeqBytes(2)}));
}

TEST_F(ReplayClientTest, MoreThanTheCapContinuesInTheNextRequest) {
  std::vector<Reply> replies = Batches(0, kMaxReplayBatches);  // one too many
  replies.push_back(End());
  ServePages({replies, {Batch(kMaxReplayBatches), End()}});
  ReplayResult result = Replay(0);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_EQ(result.batches.size(), kMaxReplayBatches + 1);
  EXPECT_EQ(result.pages, 2u);
  EXPECT_EQ(requested_starts_.back(), SeqBytes(kMaxReplayBatches));
}

TEST_F(ReplayClientTest, ExactlyTheCapIsCompleteOnceConfirmed) {
  std::vector<Reply> replies = Batches(0, kMaxReplayBatches - 1);
  replies.push_back(End());
  ServePages({replies, {End()}});
  ReplayResult result = Replay(0);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_EQ(result.batches.size(), kMaxReplayBatches);
}

// The ROUTER's queue drained just before END, after it had dropped the
// tail: END alone cannot tell. After a queue's worth of replies it is
// confirmed by asking again after the run.
TEST_F(ReplayClientTest, AnEndAfterManyRepliesIsConfirmed) {
  std::vector<Reply> first = Batches(0, 39);
  first.push_back(End());  // 40..45 were dropped before it
  std::vector<Reply> second = Batches(40, 45);
  second.push_back(End());
  ServePages({first, second});
  ReplayResult result = Replay(0);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_EQ(result.batches.size(), 46u);
  EXPECT_EQ(result.pages, 2u);
  EXPECT_EQ(requested_starts_.back(), SeqBytes(40));
}

TEST_F(ReplayClientTest, AnEndAfterFewRepliesIsTrusted) {
  std::vector<Reply> replies = Batches(0, kReplayTrustedPageReplies - 2);
  replies.push_back(End());
  ServeOnce(replies);
  ReplayResult result = Replay(0);
  EXPECT_TRUE(result.complete) << result.problem;
  EXPECT_EQ(result.pages, 1u);
}

TEST_F(ReplayClientTest, MalformedRepliesAreIncomplete) {
  const std::vector<Reply> malformed = {
      {"", SeqBytes(0)},                // no payload frame
      {"", "\x00\x00\x00\x00"s, "p"},   // 4-byte seq
      {"x", SeqBytes(0), "p"},          // delimiter not empty
      {"", "topic", SeqBytes(0), "p"},  // four frames
  };
  for (const Reply& reply : malformed) {
    ServeOnce({reply, End()});
    ReplayResult result = Replay(0);
    EXPECT_FALSE(result.complete);
    EXPECT_THAT(result.problem, HasSubstr("malformed")) << result.problem;
  }
}

TEST_F(ReplayClientTest, ShutdownInterruptsTheWait) {
  router_.Serve([this](zmq::socket_t& router) {
    // The request has arrived, so the client is waiting for replies.
    ASSERT_TRUE(ReceiveFrames(router, 2s).has_value());
    shutdown_.Trigger();
  });
  const auto begin = std::chrono::steady_clock::now();
  ReplayResult result = Replay(0, 5000ms);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s);
  EXPECT_FALSE(result.complete);
  EXPECT_THAT(result.problem, HasSubstr("shutdown"));
}

TEST_F(ReplayClientTest, LateRepliesOfAnAbandonedRequestAreNotMixedIn) {
  ReplayClient client(&context_, router_.endpoint(), &shutdown_, 100ms);
  router_.Serve([](zmq::socket_t& router) {
    std::optional<std::vector<std::string>> first = ReceiveFrames(router, 2s);
    ASSERT_TRUE(first.has_value());
    // Unanswered until the client has given up and asked again.
    std::optional<std::vector<std::string>> second = ReceiveFrames(router, 2s);
    ASSERT_TRUE(second.has_value());
    SendFrames(router, {(*first)[0], "", SeqBytes(100), "stale"});
    SendFrames(router, {(*first)[0], "", kEnd, ""});
    SendFrames(router, {(*second)[0], "", SeqBytes(7), "fresh"});
    SendFrames(router, {(*second)[0], "", kEnd, ""});
  });
  ReplayResult abandoned = client.Replay(100, std::nullopt);
  EXPECT_FALSE(abandoned.complete);
  ReplayResult result = client.Replay(7, std::nullopt);
  router_.Join();
  EXPECT_TRUE(result.complete) << result.problem;
  ASSERT_EQ(result.batches.size(), 1u);
  EXPECT_EQ(result.batches[0].payload, "fresh");
}

TEST_F(ReplayClientTest, UnusableEndpointIsIncomplete) {
  ReplayClient client(&context_, "nonsense", &shutdown_, 100ms);
  ReplayResult result = client.Replay(0, std::nullopt);
  EXPECT_FALSE(result.complete);
  EXPECT_FALSE(result.problem.empty());
}

}  // namespace
}  // namespace replay_client_test
}  // namespace kvindexer::bridge
